//! The batch run: validate the bundle and the queries once, then explain every query with its
//! own seeded RNG and report one canonical line each.
//!
//! The protocol the host's parity test replays: query `i` is explained with
//! `Xoshiro128PlusPlus::seed_from_u64(i)`, [`Options::default`], the schema's default query
//! (no extra user constraints) and at most [`RESULTS`] results.

use crate::console::Console;
use crate::queries::{Queries, QueriesError};
use cent_nostd::atlas::{Counterfactual, ExplainError, Explainer, Line, Model, Options, Summary};
use cent_nostd::bundle::{Bundle, BundleError};
use cent_nostd::capacity::COLUMNS;
use cent_nostd::schema::Query;
use core::fmt;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

/// Counterfactuals kept per query.
pub const RESULTS: usize = 3;

/// Why a run failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Failure {
    /// The embedded bundle was rejected.
    Bundle(BundleError),
    /// The embedded query batch is malformed.
    Queries(QueriesError),
    /// The queries do not have the bundle schema's column count.
    Columns { bundle: u32, queries: u32 },
    /// Some explanations returned an error (their lines say which).
    Explain { failed: u32, of: u32 },
    /// The core peripherals were already taken.
    Peripherals,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Bundle(e) => write!(f, "bundle: {e}"),
            Failure::Queries(e) => write!(f, "queries: {e}"),
            Failure::Columns { bundle, queries } => {
                write!(f, "queries: {queries} columns, but the bundle schema has {bundle}")
            }
            Failure::Explain { failed, of } => write!(f, "explain: {failed} of {of} queries failed"),
            Failure::Peripherals => write!(f, "core peripherals already taken"),
        }
    }
}

// Written here rather than derived in `queries.rs`, which stays free of crate features
// because the host's parity test compiles it too.
#[cfg(feature = "defmt")]
impl defmt::Format for QueriesError {
    fn format(&self, f: defmt::Formatter<'_>) {
        match *self {
            QueriesError::Header => defmt::write!(f, "Header"),
            QueriesError::Columns => defmt::write!(f, "Columns"),
            QueriesError::Length { rows_bytes, columns } => {
                defmt::write!(f, "Length {{ rows_bytes: {=u32}, columns: {=u32} }}", rows_bytes, columns)
            }
        }
    }
}

/// The explainer's working memory. Lives in a `static` (see the binaries' `#[entry]`), so it
/// counts as static RAM and never sits on the stack.
#[derive(Debug)]
pub struct Scratch {
    explainer: Explainer,
    out: heapless::Vec<Counterfactual, RESULTS>,
}

impl Default for Scratch {
    fn default() -> Self {
        Self::new()
    }
}

impl Scratch {
    pub const fn new() -> Self {
        Scratch { explainer: Explainer::new(), out: heapless::Vec::new() }
    }

    /// The results of the last [`explain_one`].
    pub fn results(&self) -> &[Counterfactual] {
        &self.out
    }
}

/// Parses the bundle and the queries and checks that they agree on the column count.
///
/// Never inlined, like [`explain_one`]: the decoding temporaries then live in a frame that is
/// gone before the first explanation, instead of sharing one large frame with it.
///
/// # Errors
/// [`Failure::Bundle`], [`Failure::Queries`] or [`Failure::Columns`].
#[inline(never)]
pub fn load<'a>(bundle: &'a [u8], queries: &'a [u8]) -> Result<(Bundle<'a>, Queries<'a>), Failure> {
    let bundle = Bundle::from_bytes(bundle).map_err(Failure::Bundle)?;
    let queries = Queries::from_bytes(queries).map_err(Failure::Queries)?;
    if queries.columns() != bundle.schema.columns() {
        let (bundle, queries) = (bundle.schema.columns() as u32, queries.columns() as u32);
        return Err(Failure::Columns { bundle, queries });
    }
    Ok((bundle, queries))
}

/// Explains query `index` of `queries` into `scratch` under the batch protocol.
///
/// # Errors
/// The explainer's [`ExplainError`]; [`ExplainError::Input`] for an index past the end.
#[inline(never)]
pub fn explain_one(
    scratch: &mut Scratch,
    model: &Model<'_, '_>,
    query: &Query,
    queries: &Queries<'_>,
    index: usize,
) -> Result<Summary, ExplainError> {
    let mut row = [0.0f32; COLUMNS];
    let x = row.get_mut(..queries.columns()).ok_or(ExplainError::Input)?;
    queries.read(index, x).ok_or(ExplainError::Input)?;
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(index as u64);
    scratch.explainer.explain(model, x, query, Options::default(), &mut rng, &mut scratch.out)
}

/// Explains every query, printing one [`Line`] each and then `done queries=N`.
///
/// # Errors
/// A [`Failure`] from [`load`] (nothing else is printed), or [`Failure::Explain`] after every
/// line when some explanations failed.
pub fn run(bundle: &[u8], queries: &[u8], scratch: &mut Scratch, console: &mut Console) -> Result<u32, Failure> {
    let (bundle, queries) = load(bundle, queries)?;
    let model = bundle.model();
    let query = bundle.schema.default_query();
    let mut failed = 0u32;
    for index in 0..queries.len() {
        let outcome = explain_one(scratch, &model, &query, &queries, index);
        failed += u32::from(outcome.is_err());
        let outcome = outcome.as_ref().map(|s| (s, scratch.results())).map_err(|e| *e);
        console.line(&Line { index: index as u32, outcome });
    }
    let n = queries.len() as u32;
    if failed > 0 {
        return Err(Failure::Explain { failed, of: n });
    }
    console.done(n);
    Ok(n)
}
