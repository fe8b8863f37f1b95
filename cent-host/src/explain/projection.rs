//! Neighbours moved onto what a query can reach ([`projection`], [`apply_projection`]).

use crate::profile::{Query, Schema};
use cent_nostd::schema::{Kind, Mutability};

/// Moves one encoded row onto what the query `x` can reach under `query`: immutable features
/// take `x`'s values; one-direction single-column features are clamped at `x`'s value, and an
/// ordered one-hot group whose category lies on the forbidden side of `x`'s takes `x`'s. Per
/// query, [`projection`] computes the steps once and [`apply_projection`] applies them to each
/// row.
#[cfg(test)]
pub(super) fn project(schema: &Schema, query: &Query, x: &[f32], row: &mut [f32]) {
    apply_projection(&projection(schema, query, x, row.len()), row);
}

/// One step of a query's projection ([`projection`]): set a column to a value, raise or lower it to one, or put an
/// ordered group (first column, width) back on `x`'s category when it holds a lower (`up`) or
/// higher one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Step {
    Set(usize, f32),
    AtLeast(usize, f32),
    AtMost(usize, f32),
    Rank { col: usize, width: usize, category: usize, up: bool },
}

/// The steps that move a row onto what a query can reach ([`apply_projection`]), column by
/// column (within `width` columns), with `x`'s values in them: per row, a few scalar writes.
pub(super) fn projection(schema: &Schema, query: &Query, x: &[f32], width: usize) -> Vec<Step> {
    let mut steps = Vec::new();
    for (j, f) in schema.features().iter().enumerate() {
        let span = f.columns();
        if span.end > width.min(x.len()) {
            continue;
        }
        match query.mutability[j] {
            Mutability::Free => {}
            Mutability::Immutable => steps.extend(span.map(|c| Step::Set(c, x[c]))),
            Mutability::IncreaseOnly if f.kind != Kind::Categorical => {
                steps.push(Step::AtLeast(span.start, x[span.start]));
            }
            Mutability::DecreaseOnly if f.kind != Kind::Categorical => {
                steps.push(Step::AtMost(span.start, x[span.start]));
            }
            m @ (Mutability::IncreaseOnly | Mutability::DecreaseOnly) => {
                if let (true, Some(category)) = (f.ordered, cent_nostd::schema::category(f, x)) {
                    let up = m == Mutability::IncreaseOnly;
                    steps.push(Step::Rank { col: span.start, width: span.len(), category: category.into(), up });
                }
            }
        }
    }
    steps
}

pub(super) fn apply_projection(steps: &[Step], row: &mut [f32]) {
    for &step in steps {
        match step {
            Step::Set(c, v) => {
                if let Some(to) = row.get_mut(c) {
                    *to = v;
                }
            }
            Step::AtLeast(c, v) => {
                if let Some(to) = row.get_mut(c) {
                    *to = to.max(v);
                }
            }
            Step::AtMost(c, v) => {
                if let Some(to) = row.get_mut(c) {
                    *to = to.min(v);
                }
            }
            Step::Rank { col, width, category, up } => {
                let Some(group) = row.get_mut(col..col + width) else { continue };
                let Some(hot) = group.iter().position(|v| *v > 0.5) else { continue };
                if (up && hot < category) || (!up && hot > category) {
                    group.fill(0.0);
                    group[category] = 1.0;
                }
            }
        }
    }
}
