//! The burden of recourse by group: over a batch's results, per value of each protected feature,
//! how many people were refused, the share of them with any recourse, and the median cost,
//! changed features and target probability of their best answer; and the gap between the best
//! and the worst served group of each feature. Rows the batch could not explain (a missing or
//! unreadable value) are in no figure but their group's count of errors, so that an audit
//! shows whom the batch left out as well as whom it served.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The best answer one refused person got.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Recourse {
    pub cost: f64,
    pub l0: usize,
    pub probability: f32,
}

/// One person of a batch: their value of each audited feature (in the order of [`audit`]'s
/// `by`), whether the model refused them, and their best answer when they have one; or, when
/// `error`, a row the batch could not explain (counted in its groups' `errors` only).
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub groups: Vec<String>,
    pub refused: bool,
    pub recourse: Option<Recourse>,
    pub error: bool,
}

/// The figures of one group (one value of one feature).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    pub feature: String,
    pub value: String,
    /// People the batch explained (or found already favourable).
    pub people: usize,
    /// Rows of this group the batch could not explain: in none of the other figures.
    pub errors: usize,
    pub refused: usize,
    /// Refused people with at least one counterfactual.
    pub with_recourse: usize,
    /// `with_recourse / refused` (`None` when nobody in the group was refused).
    pub recourse_share: Option<f64>,
    /// Medians over the refused people with recourse (`None` when there are none).
    pub median_cost: Option<f64>,
    pub median_l0: Option<f64>,
    pub median_probability: Option<f64>,
}

/// The spread of one feature's groups: the largest difference between two of its groups.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gap {
    pub feature: String,
    pub recourse_share: Option<f64>,
    pub median_cost: Option<f64>,
}

/// The audit of a batch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub by: Vec<String>,
    pub people: usize,
    /// Rows the batch could not explain, left out of every figure but the groups' `errors`.
    pub errors: usize,
    pub groups: Vec<Group>,
    pub gaps: Vec<Gap>,
}

#[derive(Default)]
struct Tally {
    people: usize,
    errors: usize,
    refused: usize,
    costs: Vec<f64>,
    l0: Vec<f64>,
    probabilities: Vec<f64>,
}

/// Groups `records` by each feature of `by` (a record's `groups[i]` is its value of `by[i]`).
pub fn audit(by: &[String], records: impl IntoIterator<Item = Record>) -> Report {
    let mut tallies: Vec<BTreeMap<String, Tally>> = by.iter().map(|_| BTreeMap::new()).collect();
    let (mut people, mut errors) = (0, 0);
    for r in records {
        if r.error {
            errors += 1;
        } else {
            people += 1;
        }
        for (tally, value) in tallies.iter_mut().zip(&r.groups) {
            let t = tally.entry(value.clone()).or_default();
            if r.error {
                t.errors += 1;
                continue;
            }
            t.people += 1;
            if !r.refused {
                continue;
            }
            t.refused += 1;
            if let Some(a) = r.recourse {
                t.costs.push(a.cost);
                t.l0.push(a.l0 as f64);
                t.probabilities.push(f64::from(a.probability));
            }
        }
    }
    let mut groups = Vec::new();
    let mut gaps = Vec::new();
    for (feature, tally) in by.iter().zip(tallies) {
        let first = groups.len();
        for (value, mut t) in tally {
            let with_recourse = t.costs.len();
            groups.push(Group {
                feature: feature.clone(),
                value,
                people: t.people,
                errors: t.errors,
                refused: t.refused,
                with_recourse,
                recourse_share: (t.refused > 0).then(|| with_recourse as f64 / t.refused as f64),
                median_cost: median(&mut t.costs),
                median_l0: median(&mut t.l0),
                median_probability: median(&mut t.probabilities),
            });
        }
        let spread = |f: fn(&Group) -> Option<f64>| {
            let v: Vec<f64> = groups[first..].iter().filter_map(f).collect();
            let (lo, hi) = v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
            (v.len() >= 2).then_some(hi - lo)
        };
        gaps.push(Gap {
            feature: feature.clone(),
            recourse_share: spread(|g| g.recourse_share),
            median_cost: spread(|g| g.median_cost),
        });
    }
    Report { by: by.to_vec(), people, errors, groups, gaps }
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

impl Report {
    /// The report as Markdown: one table of groups per feature, then the gaps.
    pub fn markdown(&self) -> String {
        let fmt = |v: Option<f64>, digits: usize| v.map_or_else(|| "–".to_string(), |x| format!("{x:.digits$}"));
        let mut s = format!(
            "# Recourse by group\n\n{} people; refused = the model does not give them the favourable class; \
             errors = rows the batch could not explain (a missing or unreadable value), in no other figure \
             ({} in all).\n",
            self.people, self.errors
        );
        for (feature, gap) in self.by.iter().zip(&self.gaps) {
            let _ = write!(
                s,
                "\n## {feature}\n\n| {feature} | people | errors | refused | with recourse | share | median cost | median l0 | median p(target) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
            );
            for g in self.groups.iter().filter(|g| &g.feature == feature) {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    g.value,
                    g.people,
                    g.errors,
                    g.refused,
                    g.with_recourse,
                    fmt(g.recourse_share, 2),
                    fmt(g.median_cost, 3),
                    fmt(g.median_l0, 1),
                    fmt(g.median_probability, 2)
                );
            }
            let _ = writeln!(
                s,
                "\nGap between groups: recourse share {}, median cost {}.",
                fmt(gap.recourse_share, 2),
                fmt(gap.median_cost, 3)
            );
        }
        s
    }
}

impl Report {
    /// An SVG bar chart of each group's median cost of recourse (labelled with its share of
    /// refused people with recourse), groups of one feature together.
    ///
    /// # Errors
    /// The drawing backend's error, as text.
    pub fn plot(&self, path: &std::path::Path) -> Result<(), String> {
        use plotters::prelude::*;
        let bars: Vec<(String, f64, String)> = self
            .groups
            .iter()
            .map(|g| {
                let share = g
                    .recourse_share
                    .map_or_else(|| "no one refused".to_string(), |s| format!("{:.0} % with recourse", s * 100.0));
                (format!("{}={}", g.feature, g.value), g.median_cost.unwrap_or(0.0), share)
            })
            .collect();
        let n = bars.len().max(1);
        let x_max = bars.iter().map(|b| b.1).fold(0.0, f64::max).max(1e-3) * 2.2;
        let root = SVGBackend::new(path, (760, 80 + 28 * n as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption("median cost of recourse by group", ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(36)
            .y_label_area_size(8)
            .build_cartesian_2d(0.0..x_max, 0.0..n as f64)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("median cost of the best answer (refused people with recourse)")
            .disable_y_mesh()
            .y_labels(0)
            .light_line_style(WHITE)
            .draw()
            .map_err(|e| e.to_string())?;
        let label = ("sans-serif", 12).into_font();
        chart
            .draw_series(bars.iter().enumerate().map(|(i, (_, cost, _))| {
                let y = i as f64;
                Rectangle::new([(0.0, y + 0.2), (*cost, y + 0.8)], BLUE.mix(0.6).filled())
            }))
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(bars.iter().enumerate().map(|(i, (name, cost, share))| {
                EmptyElement::at((*cost, i as f64 + 0.5))
                    + Text::new(format!("{name}: {cost:.3} · {share}"), (6, -6), label.clone())
            }))
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(sex: &str, refused: bool, recourse: Option<(f64, usize, f32)>) -> Record {
        Record {
            groups: vec![sex.to_string()],
            refused,
            recourse: recourse.map(|(cost, l0, probability)| Recourse { cost, l0, probability }),
            error: false,
        }
    }

    #[test]
    fn test_figures_match_a_hand_count() {
        let records = vec![
            rec("Female", true, Some((1.0, 1, 0.6))),
            rec("Female", true, Some((3.0, 2, 0.8))),
            rec("Female", true, None),
            rec("Female", false, None),
            rec("Male", true, Some((0.5, 1, 0.7))),
            rec("Male", false, None),
            rec("Male", false, None),
            Record { error: true, ..rec("Female", false, None) },
            Record { error: true, ..rec("Other", true, Some((9.0, 9, 0.9))) },
        ];
        let r = audit(&["sex".to_string()], records);
        assert_eq!((r.people, r.errors), (7, 2));
        let f = &r.groups[0];
        // Female: 4 people, 3 refused, 2 with recourse; costs 1 and 3, l0 1 and 2.
        assert_eq!((f.value.as_str(), f.people, f.refused, f.with_recourse), ("Female", 4, 3, 2));
        assert_eq!(f.errors, 1);
        assert_eq!(f.recourse_share, Some(2.0 / 3.0));
        assert_eq!((f.median_cost, f.median_l0), (Some(2.0), Some(1.5)));
        assert!((f.median_probability.unwrap() - 0.7).abs() < 1e-6);
        let m = &r.groups[1];
        assert_eq!((m.value.as_str(), m.people, m.refused, m.with_recourse), ("Male", 3, 1, 1));
        assert_eq!((m.recourse_share, m.median_cost), (Some(1.0), Some(0.5)));
        // A group only errors fill: counted, in no other figure, in no gap.
        let o = &r.groups[2];
        assert_eq!((o.value.as_str(), o.people, o.errors, o.refused, o.recourse_share), ("Other", 0, 1, 0, None));
        let gap = &r.gaps[0];
        assert!((gap.recourse_share.unwrap() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(gap.median_cost, Some(1.5));
        let md = r.markdown();
        assert!(md.contains("| Female | 4 | 1 | 3 | 2 | 0.67 | 2.000 | 1.5 | 0.70 |"), "{md}");
        assert!(md.contains("(2 in all)"), "{md}");
        assert!(md.contains("Gap between groups: recourse share 0.33, median cost 1.500."), "{md}");
    }

    #[test]
    fn test_groups_without_refusals_have_no_share() {
        let r = audit(&["sex".to_string()], vec![rec("Female", false, None)]);
        assert_eq!((r.groups[0].recourse_share, r.groups[0].median_cost), (None, None));
        assert_eq!(r.gaps[0].recourse_share, None);
    }
}
