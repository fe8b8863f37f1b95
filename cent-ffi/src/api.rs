//! The exported functions: open a bundle, explain a query, read the outcome.
//!
//! Each checks its pointers (null, alignment, overlap of outputs with inputs) and lengths
//! before it touches memory, and returns a [`CentStatus`]; none allocates or panics.

#![allow(unsafe_code, reason = "exported symbols and unsafe extern functions taking C pointers")]

use crate::CENT_MAX_ANSWERS;
use crate::boundary::{disjoint, get, put, slice, slice_mut, span};
use crate::options::CentOptions;
use crate::outcome::{CentAnswer, CentSummary};
use crate::status::CentStatus;
use crate::storage::{self, CentBundle, CentResult, CentScratch, Opened, Outcome};
use cent_nostd::atlas::{Counterfactual, Explainer, Model, Options, Summary};
use cent_nostd::bundle::Bundle;
use cent_nostd::schema::{Kind, Mutability, Query};
use core::ops::Range;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

pub use crate::storage::{CENT_BUNDLE_WORDS, CENT_RESULT_WORDS, CENT_SCRATCH_WORDS};

/// Facts about an open bundle.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CentBundleInfo {
    /// Logical features of the schema.
    pub features: u32,
    /// Encoded columns: the length of every query.
    pub columns: u32,
    /// Classes of the model.
    pub classes: u32,
    /// Anchors of the atlas (one tree each).
    pub anchors: u32,
    /// Latent dimensions of the encoder.
    pub latent: u32,
    /// 1 when the bundle has an on-device classifier that confirms counterfactuals, else 0.
    pub has_classifier: u32,
    /// The bundle's name (UTF-8, not NUL-terminated), inside the bundle bytes.
    pub name: *const u8,
    /// Bytes of `name`.
    pub name_len: usize,
}

/// How a logical feature is encoded.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CentKind {
    /// One column, min-max scaled to [0, 1].
    Continuous = 0,
    /// One column, whole raw values, min-max scaled to [0, 1].
    Integer = 1,
    /// One column holding 0 or 1.
    Binary = 2,
    /// A one-hot group of `width` columns.
    Categorical = 3,
}

/// Which changes of a feature the schema allows by default.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CentMutability {
    Free = 0,
    IncreaseOnly = 1,
    DecreaseOnly = 2,
    Immutable = 3,
}

/// One logical feature of an open bundle's schema: where its encoded columns are and how raw
/// values map to them (`encoded = (raw - min) / (max - min)` for the scaled kinds).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CentFeature {
    pub kind: CentKind,
    /// First encoded column.
    pub column: u32,
    /// Encoded columns: 1, or the categories of a group.
    pub width: u32,
    /// Raw range.
    pub min: f32,
    pub max: f32,
    /// Default edit cost.
    pub cost: f32,
    /// Default mutability.
    pub mutability: CentMutability,
    /// 1 for a categorical group whose categories are ranked lowest first, else 0.
    pub ordered: u32,
}

fn status(r: Result<(), CentStatus>) -> CentStatus {
    match r {
        Ok(()) => CentStatus::Ok,
        Err(s) => s,
    }
}

/// Validates the bundle in `bytes[0..len]` and opens it in `bundle`, which then holds views
/// into those bytes (nothing is copied). On any failure `bundle` holds no open bundle.
///
/// # Safety
/// `bytes` points to `len` readable bytes that stay in place and unchanged until the bundle is
/// closed or the storage reused; `bundle` points to a `CentBundle` nothing else uses during
/// the call. Either may be NULL (`CENT_STATUS_NULL_POINTER`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cent_bundle_open(bundle: *mut CentBundle, bytes: *const u8, len: usize) -> CentStatus {
    if bundle.is_null() {
        return CentStatus::NullPointer;
    }
    if !bytes.is_null() && disjoint(&span(bundle, 1), &span(bytes, len)).is_err() {
        return CentStatus::Overlap;
    }
    // SAFETY: the caller's contract on `bytes`, for as long as the bundle is open (the
    // `'static` of `Opened`).
    let opened = unsafe { slice::<u8>(bytes, len) }
        .and_then(|b| Ok(Opened { bundle: Bundle::from_bytes(b)?, bytes: span(bytes, len) }));
    let (value, outcome) = match opened {
        Ok(o) => (Some(o), CentStatus::Ok),
        Err(e) => (None, e),
    };
    // A refused bundle leaves the storage "not open".
    // SAFETY: forwarded contract; the storage does not overlap the bytes (checked).
    match unsafe { storage::open(bundle, value) } {
        Ok(()) => outcome,
        Err(e) => e,
    }
}

/// Marks `bundle` as not open; its bytes may then be released. Closing twice is harmless.
///
/// # Safety
/// `bundle` points to a `CentBundle` nothing else uses during the call, or is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cent_bundle_close(bundle: *mut CentBundle) -> CentStatus {
    // SAFETY: forwarded contract.
    status(unsafe { storage::open(bundle, None) })
}

/// Writes facts about the open bundle to `info`.
///
/// # Safety
/// `bundle` points to a `CentBundle` that is zeroed or was written by this library; `info`
/// points to writable memory for a `CentBundleInfo`. Either may be NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cent_bundle_info(bundle: *const CentBundle, info: *mut CentBundleInfo) -> CentStatus {
    // SAFETY: forwarded contract.
    let result = unsafe { storage::opened(bundle) }.and_then(|o| {
        let b = &o.bundle;
        disjoint(&span(info, 1), &span(bundle, 1))?;
        disjoint(&span(info, 1), &o.bytes)?;
        let value = CentBundleInfo {
            features: b.schema.features().len() as u32,
            columns: b.schema.columns() as u32,
            classes: b.schema.classes() as u32,
            anchors: b.atlas.len() as u32,
            latent: b.atlas.latent() as u32,
            has_classifier: u32::from(b.classifier.is_some()),
            name: b.name.as_ptr(),
            name_len: b.name.len(),
        };
        // SAFETY: forwarded contract; disjoint from the storage and the bundle bytes (checked).
        unsafe { put(info, value) }
    });
    status(result)
}

/// Writes logical feature `index` of the open bundle's schema to `feature`.
///
/// # Safety
/// As [`cent_bundle_info`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cent_bundle_feature(
    bundle: *const CentBundle,
    index: usize,
    feature: *mut CentFeature,
) -> CentStatus {
    // SAFETY: forwarded contract.
    let result = unsafe { storage::opened(bundle) }.and_then(|o| {
        let f = o.bundle.schema.feature(index).ok_or(CentStatus::Index)?;
        disjoint(&span(feature, 1), &span(bundle, 1))?;
        disjoint(&span(feature, 1), &o.bytes)?;
        let kind = match f.kind {
            Kind::Continuous => CentKind::Continuous,
            Kind::Integer => CentKind::Integer,
            Kind::Binary => CentKind::Binary,
            Kind::Categorical => CentKind::Categorical,
        };
        let mutability = match f.mutability {
            Mutability::Free => CentMutability::Free,
            Mutability::IncreaseOnly => CentMutability::IncreaseOnly,
            Mutability::DecreaseOnly => CentMutability::DecreaseOnly,
            Mutability::Immutable => CentMutability::Immutable,
        };
        let value = CentFeature {
            kind,
            column: f.col as u32,
            width: f.width as u32,
            min: f.min,
            max: f.max,
            cost: f.cost,
            mutability,
            ordered: u32::from(f.ordered),
        };
        // SAFETY: forwarded contract; disjoint from the storage and the bundle bytes (checked).
        unsafe { put(feature, value) }
    });
    status(result)
}

/// Explains query `x[0..x_len]` (encoded values in the schema's column order) with the open
/// `bundle` under `options`, using `scratch` as working memory, and writes the outcome to
/// `result`. The result first reads as "no result"; it holds the outcome only when this returns
/// `CENT_STATUS_OK` (which includes finding no counterfactual: see `CentSummary::not_found`).
///
/// # Safety
/// `bundle` is a `CentBundle` as in [`cent_bundle_info`]; `x` points to `x_len` floats;
/// `options` to a `CentOptions` whose `costs`, when not NULL, points to `costs_len` floats;
/// `scratch` and `result` to storage that is zeroed or was written by this library and that
/// nothing else uses during the call. Outputs may not overlap inputs (`CENT_STATUS_OVERLAP`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cent_explain(
    bundle: *const CentBundle,
    x: *const f32,
    x_len: usize,
    options: *const CentOptions,
    scratch: *mut CentScratch,
    result: *mut CentResult,
) -> CentStatus {
    let pointers = [bundle as usize, x as usize, options as usize, scratch as usize, result as usize];
    if pointers.contains(&0) {
        return CentStatus::NullPointer;
    }
    // SAFETY: forwarded contract (bundle and options are only read).
    let read = unsafe { storage::opened(bundle) }.and_then(|o| Ok((o, *unsafe { get(options) }?)));
    let (opened, o) = match read {
        Ok(r) => r,
        Err(e) => return e,
    };
    let costs = if o.costs.is_null() { 0..0 } else { span(o.costs, o.costs_len) };
    let inputs = [span(bundle, 1), opened.bytes.clone(), span(x, x_len), span(options, 1), costs];
    if let Err(e) = outputs_apart(&[span(scratch, 1), span(result, 1)], &inputs) {
        return e;
    }
    // SAFETY: forwarded contract; `result` overlaps no other argument (checked above).
    let slot = match unsafe { storage::begin(result) } {
        Ok(s) => s,
        Err(e) => return e,
    };
    // SAFETY: forwarded contract; `scratch` overlaps no other argument (checked above).
    let explained = unsafe { inputs_of(&opened.bundle, x, x_len, &o) }
        .and_then(|(x, query)| Ok((x, query, unsafe { storage::scratch(scratch) }?)))
        .and_then(|(x, query, explainer)| {
            let out = slot.outcome();
            out.columns = x.len();
            let model = opened.bundle.model();
            let (options, answers) = o.core(&opened.bundle.schema)?;
            let mut rng = Xoshiro128PlusPlus::seed_from_u64(o.seed);
            let call = Call { explainer, model: &model, x, query: &query, options };
            out.summary = call.run(answers, &mut rng, &mut out.answers)?;
            Ok(())
        });
    if explained.is_ok() {
        slot.finish();
    }
    status(explained)
}

/// `CENT_STATUS_OVERLAP` when an output shares a byte with another output or an input.
fn outputs_apart(outputs: &[Range<usize>], inputs: &[Range<usize>]) -> Result<(), CentStatus> {
    for (i, out) in outputs.iter().enumerate() {
        for other in outputs.iter().skip(i.saturating_add(1)).chain(inputs) {
            disjoint(out, other)?;
        }
    }
    Ok(())
}

/// The query vector (checked against the schema) and its constraints.
///
/// # Safety
/// `x` points to `x_len` floats and `o.costs`, when not NULL, to `o.costs_len` floats, none
/// written during `'a`.
unsafe fn inputs_of<'a>(
    bundle: &Bundle<'_>,
    x: *const f32,
    x_len: usize,
    o: &CentOptions,
) -> Result<(&'a [f32], Query), CentStatus> {
    // SAFETY: forwarded contract.
    let x = unsafe { slice(x, x_len) }?;
    if x.len() != bundle.schema.columns() {
        return Err(CentStatus::QueryLength);
    }
    if !x.iter().all(|v| v.is_finite()) {
        return Err(CentStatus::QueryValue);
    }
    // SAFETY: forwarded contract.
    let costs = if o.costs.is_null() { None } else { Some(unsafe { slice(o.costs, o.costs_len) }?) };
    Ok((x, o.query(&bundle.schema, costs)?))
}

/// One call of the core's explainer.
struct Call<'c, 'm, 'a> {
    explainer: &'c mut Explainer,
    model: &'c Model<'m, 'a>,
    x: &'c [f32],
    query: &'c Query,
    options: Options,
}

impl Call<'_, '_, '_> {
    /// Explains into `out`, keeping at most `answers` (1 to `CENT_MAX_ANSWERS`) results: the
    /// core stops searching once its output vector is full, so a smaller count runs with a
    /// vector of that capacity, exactly as a caller of the core asking for that many would.
    fn run(
        self,
        answers: usize,
        rng: &mut Xoshiro128PlusPlus,
        out: &mut heapless::Vec<Counterfactual, CENT_MAX_ANSWERS>,
    ) -> Result<Summary, CentStatus> {
        match answers {
            1 => self.fewer::<1>(rng, out),
            2 => self.fewer::<2>(rng, out),
            CENT_MAX_ANSWERS => Ok(self.explainer.explain(self.model, self.x, self.query, self.options, rng, out)?),
            _ => Err(CentStatus::InvalidOptions),
        }
    }

    fn fewer<const K: usize>(
        self,
        rng: &mut Xoshiro128PlusPlus,
        out: &mut heapless::Vec<Counterfactual, CENT_MAX_ANSWERS>,
    ) -> Result<Summary, CentStatus> {
        let mut few = heapless::Vec::<Counterfactual, K>::new();
        let summary = self.explainer.explain(self.model, self.x, self.query, self.options, rng, &mut few)?;
        out.clear();
        for cf in few {
            out.push(cf).map_err(|_| CentStatus::Capacity)?;
        }
        Ok(summary)
    }
}

/// Writes what the explanation in `result` did to `summary`.
///
/// # Safety
/// `result` points to a `CentResult` that is zeroed or was written by this library; `summary`
/// to writable memory for a `CentSummary`. Either may be NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cent_result_summary(result: *const CentResult, summary: *mut CentSummary) -> CentStatus {
    // SAFETY: forwarded contract.
    let r = unsafe { read_outcome(result, span(summary, 1)) }.and_then(|out| {
        let value = CentSummary::of(&out.summary, out.answers.len(), out.columns);
        // SAFETY: forwarded contract; disjoint from the result (checked).
        unsafe { put(summary, value) }
    });
    status(r)
}

/// Writes answer `index` (0 is the first: see `cent_nostd::atlas::Explainer::explain` for the
/// order) of `result` to `answer`.
///
/// # Safety
/// As [`cent_result_summary`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cent_result_answer(
    result: *const CentResult,
    index: usize,
    answer: *mut CentAnswer,
) -> CentStatus {
    // SAFETY: forwarded contract.
    let r = unsafe { read_outcome(result, span(answer, 1)) }.and_then(|out| {
        let cf = out.answers.get(index).ok_or(CentStatus::Index)?;
        // SAFETY: forwarded contract; disjoint from the result (checked).
        unsafe { put(answer, CentAnswer::of(cf)) }
    });
    status(r)
}

/// Copies the encoded values of answer `index` of `result` to `values[0..columns]`
/// (`CentSummary::columns`); `len` is the capacity of `values` and must be at least that.
///
/// # Safety
/// `result` as in [`cent_result_summary`]; `values` points to `len` writable floats, or is NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cent_result_values(
    result: *const CentResult,
    index: usize,
    values: *mut f32,
    len: usize,
) -> CentStatus {
    if values.is_null() {
        return CentStatus::NullPointer;
    }
    // SAFETY: forwarded contract (the result is only read).
    let r = unsafe { storage::outcome(result) }.and_then(|out| {
        let cf = out.answers.get(index).ok_or(CentStatus::Index)?;
        let n = cf.x.len();
        if len < n {
            return Err(CentStatus::BufferTooSmall);
        }
        // Only the first `n` floats are written.
        disjoint(&span(values, n), &span(result, 1))?;
        // SAFETY: forwarded contract (`values` holds at least `n` floats); disjoint from the
        // result (checked).
        let dst = unsafe { slice_mut(values, n) }?;
        for (d, v) in dst.iter_mut().zip(&cf.x) {
            *d = *v;
        }
        Ok(())
    });
    status(r)
}

/// The outcome in `result`, once `output` is known not to overlap it.
///
/// # Safety
/// As [`storage::outcome`].
unsafe fn read_outcome<'a>(result: *const CentResult, output: Range<usize>) -> Result<&'a Outcome, CentStatus> {
    if output.start == 0 {
        return Err(CentStatus::NullPointer);
    }
    disjoint(&output, &span(result, 1))?;
    // SAFETY: forwarded contract.
    unsafe { storage::outcome(result) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::CentNotFound;
    use cent_nostd::atlas::Line;
    use core::ptr::{null, null_mut};
    use std::boxed::Box;
    use std::vec::Vec;

    /// The firmware's bundle and query batch (see `firmware/README.md`).
    const BUNDLE: &[u8] = include_bytes!("../../firmware/data/bundle.cent");
    const QUERIES: &[u8] = include_bytes!("../../firmware/data/queries.bin");

    fn queries() -> Vec<Vec<f32>> {
        let columns = u32::from_le_bytes(QUERIES[..4].try_into().unwrap()) as usize;
        let values: Vec<f32> =
            QUERIES[4..].chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
        values.chunks_exact(columns).map(<[f32]>::to_vec).collect()
    }

    /// Caller-owned storage as a C program would hold it (boxed: the scratch is 6 KB).
    struct Storage {
        bundle: Box<CentBundle>,
        scratch: Box<CentScratch>,
        result: Box<CentResult>,
    }

    impl Storage {
        fn new() -> Self {
            Storage {
                bundle: Box::new(CentBundle::zeroed()),
                scratch: Box::new(CentScratch::zeroed()),
                result: Box::new(CentResult::zeroed()),
            }
        }

        fn open(&mut self, bytes: &[u8]) -> CentStatus {
            unsafe { cent_bundle_open(&mut *self.bundle, bytes.as_ptr(), bytes.len()) }
        }

        fn explain(&mut self, x: &[f32], options: &CentOptions) -> CentStatus {
            unsafe { cent_explain(&*self.bundle, x.as_ptr(), x.len(), options, &mut *self.scratch, &mut *self.result) }
        }

        fn summary(&self) -> Result<CentSummary, CentStatus> {
            let mut s = CentSummary {
                answers: 9,
                columns: 0,
                anchor: 0,
                fact: 0,
                examined: 0,
                rejected: 0,
                not_found: CentNotFound::None,
            };
            match unsafe { cent_result_summary(&*self.result, &mut s) } {
                CentStatus::Ok => Ok(s),
                e => Err(e),
            }
        }

        fn answer(&self, i: usize) -> Result<(CentAnswer, Vec<f32>), CentStatus> {
            let mut a = CentAnswer { cost: 0, changed: 0, leaf: 0, class_id: 0, features_changed: 0 };
            let mut x = std::vec![0.0f32; crate::CENT_MAX_COLUMNS];
            let status = unsafe { cent_result_answer(&*self.result, i, &mut a) };
            if status != CentStatus::Ok {
                return Err(status);
            }
            let status = unsafe { cent_result_values(&*self.result, i, x.as_mut_ptr(), x.len()) };
            if status != CentStatus::Ok {
                return Err(status);
            }
            x.truncate(self.summary()?.columns as usize);
            Ok((a, x))
        }
    }

    fn opened() -> Storage {
        let mut s = Storage::new();
        assert_eq!(s.open(BUNDLE), CentStatus::Ok);
        s
    }

    /// The core's own run of query `i` under the firmware protocol, as its canonical line.
    fn core_line(i: usize, x: &[f32], answers: usize) -> std::string::String {
        let bundle = Bundle::from_bytes(BUNDLE).unwrap();
        let mut explainer: Box<Explainer> = Box::default();
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(i as u64);
        let (model, query) = (bundle.model(), bundle.schema.default_query());
        let mut out: heapless::Vec<Counterfactual, CENT_MAX_ANSWERS> = heapless::Vec::new();
        let mut few: heapless::Vec<Counterfactual, 1> = heapless::Vec::new();
        let outcome = if answers == 1 {
            let r = explainer.explain(&model, x, &query, Options::default(), &mut rng, &mut few);
            out.extend(few.iter().cloned());
            r
        } else {
            explainer.explain(&model, x, &query, Options::default(), &mut rng, &mut out)
        };
        let outcome = outcome.as_ref().map(|s| (s, out.as_slice())).map_err(|e| *e);
        std::format!("{}", Line { index: i as u32, outcome })
    }

    /// The same line rebuilt from what the C API reports.
    fn api_line(s: &Storage, i: usize) -> std::string::String {
        let sum = s.summary().unwrap();
        let mut line = std::format!(
            "q={i} anchor={} fact={} examined={} rejected={} n={}",
            sum.anchor,
            sum.fact,
            sum.examined,
            sum.rejected,
            sum.answers
        );
        let reason = match sum.not_found {
            CentNotFound::None => "",
            CentNotFound::NoContrastLeaf => " not_found=NoContrastLeaf",
            CentNotFound::Blocked => " not_found=Blocked",
            CentNotFound::NotConfirmed => " not_found=NotConfirmed",
        };
        line += reason;
        for k in 0..sum.answers as usize {
            let (a, x) = s.answer(k).unwrap();
            let class = if a.class_id < 0 { "-".into() } else { a.class_id.to_string() };
            let bits: Vec<_> = x.iter().map(|v| std::format!("{:08x}", v.to_bits())).collect();
            line += &std::format!(
                " | leaf={} cost={} class={class} changed={:x} x={}",
                a.leaf,
                a.cost,
                a.changed,
                bits.join(",")
            );
            assert_eq!(a.features_changed, a.changed.count_ones());
        }
        line
    }

    use std::string::ToString;

    #[test]
    fn test_explain_reports_what_the_core_computes() {
        let mut s = opened();
        let mut found = 0;
        for (i, x) in queries().iter().enumerate() {
            let options = CentOptions { seed: i as u64, ..CentOptions::default() };
            assert_eq!(s.explain(x, &options), CentStatus::Ok, "query {i}");
            assert_eq!(api_line(&s, i), core_line(i, x, CENT_MAX_ANSWERS));
            found += usize::from(s.summary().unwrap().answers > 0);
        }
        assert!(found > 0, "no query found a counterfactual: the comparison would be vacuous");
    }

    #[test]
    fn test_fewer_answers_run_as_the_core_with_that_capacity() {
        let mut s = opened();
        for (i, x) in queries().iter().enumerate().take(8) {
            let options = CentOptions { seed: i as u64, answers: 1, ..CentOptions::default() };
            assert_eq!(s.explain(x, &options), CentStatus::Ok);
            assert!(s.summary().unwrap().answers <= 1);
            assert_eq!(api_line(&s, i), core_line(i, x, 1));
        }
    }

    #[test]
    fn test_bundle_info_and_features() {
        let s = opened();
        let bundle = Bundle::from_bytes(BUNDLE).unwrap();
        let mut info = core::mem::MaybeUninit::<CentBundleInfo>::uninit();
        assert_eq!(unsafe { cent_bundle_info(&*s.bundle, info.as_mut_ptr()) }, CentStatus::Ok);
        let info = unsafe { info.assume_init() };
        assert_eq!(info.columns as usize, bundle.schema.columns());
        assert_eq!(info.features as usize, bundle.schema.features().len());
        assert_eq!((info.classes, info.anchors, info.has_classifier), (2, 32, 1));
        let name = unsafe { core::slice::from_raw_parts(info.name, info.name_len) };
        assert_eq!(name, bundle.name.as_bytes());
        let mut f = core::mem::MaybeUninit::<CentFeature>::uninit();
        let last = info.features as usize - 1;
        assert_eq!(unsafe { cent_bundle_feature(&*s.bundle, last, f.as_mut_ptr()) }, CentStatus::Ok);
        let f = unsafe { f.assume_init() };
        assert_eq!(f.column + f.width, info.columns, "the last feature ends at the last column");
        assert_eq!(unsafe { cent_bundle_feature(&*s.bundle, last + 1, f_ptr()) }, CentStatus::Index);
        assert_eq!(unsafe { cent_bundle_feature(&*s.bundle, 0, null_mut()) }, CentStatus::NullPointer);
        assert_eq!(unsafe { cent_bundle_info(&*s.bundle, null_mut()) }, CentStatus::NullPointer);
        assert_eq!(unsafe { cent_bundle_info(null(), info_ptr()) }, CentStatus::NullPointer);
        // Outputs over the open bundle's bytes or its storage.
        let mut bytes = std::vec![0u64; BUNDLE.len() / 8 + 1];
        let copy = unsafe { core::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast::<u8>(), BUNDLE.len()) };
        copy.copy_from_slice(BUNDLE);
        let mut t = Storage::new();
        assert_eq!(unsafe { cent_bundle_open(&mut *t.bundle, copy.as_ptr(), copy.len()) }, CentStatus::Ok);
        let over_bytes = bytes.as_mut_ptr().cast::<CentBundleInfo>();
        assert_eq!(unsafe { cent_bundle_info(&*t.bundle, over_bytes) }, CentStatus::Overlap);
        assert_eq!(unsafe { cent_bundle_feature(&*t.bundle, 0, over_bytes.cast()) }, CentStatus::Overlap);
        let over_storage = (&mut *t.bundle as *mut CentBundle).cast::<CentBundleInfo>();
        assert_eq!(unsafe { cent_bundle_info(&*t.bundle, over_storage) }, CentStatus::Overlap);
    }

    fn f_ptr() -> *mut CentFeature {
        Box::into_raw(Box::new(core::mem::MaybeUninit::<CentFeature>::uninit())).cast()
    }

    fn info_ptr() -> *mut CentBundleInfo {
        Box::into_raw(Box::new(core::mem::MaybeUninit::<CentBundleInfo>::uninit())).cast()
    }

    #[test]
    fn test_bad_bundles_return_their_status_and_leave_nothing_open() {
        let mut s = opened();
        let mut flipped = BUNDLE.to_vec();
        let middle = flipped.len() / 2;
        flipped[middle] ^= 1;
        let mut version = BUNDLE.to_vec();
        version[4] = 9;
        let mut trailing = BUNDLE.to_vec();
        trailing.push(0);
        let cases: [(&[u8], CentStatus); 7] = [
            (b"", CentStatus::BadLength),
            (b"not a bundle", CentStatus::BadMagic),
            (&BUNDLE[..10], CentStatus::BadLength),
            (&BUNDLE[..BUNDLE.len() - 1], CentStatus::BadLength),
            (&trailing, CentStatus::BadLength),
            (&flipped, CentStatus::BadChecksum),
            (&version, CentStatus::BadVersion),
        ];
        for (bytes, expected) in cases {
            assert_eq!(s.open(bytes), expected);
            let mut info = core::mem::MaybeUninit::<CentBundleInfo>::uninit();
            assert_eq!(unsafe { cent_bundle_info(&*s.bundle, info.as_mut_ptr()) }, CentStatus::NotOpen);
            assert_eq!(s.explain(&queries()[0], &CentOptions::default()), CentStatus::NotOpen);
            assert_eq!(s.open(BUNDLE), CentStatus::Ok);
        }
    }

    #[test]
    fn test_open_checks_its_pointers() {
        let mut s = Storage::new();
        assert_eq!(unsafe { cent_bundle_open(null_mut(), BUNDLE.as_ptr(), BUNDLE.len()) }, CentStatus::NullPointer);
        assert_eq!(unsafe { cent_bundle_open(&mut *s.bundle, null(), 4) }, CentStatus::NullPointer);
        // Misaligned storage: one byte into an 8-aligned buffer.
        let mut raw = std::vec![0u64; CENT_BUNDLE_WORDS + 1];
        let odd = unsafe { raw.as_mut_ptr().cast::<u8>().add(1) }.cast::<CentBundle>();
        assert_eq!(unsafe { cent_bundle_open(odd, BUNDLE.as_ptr(), BUNDLE.len()) }, CentStatus::Misaligned);
        // Bytes inside the storage they would be opened into.
        let inside = (&mut *s.bundle as *mut CentBundle).cast::<u8>();
        assert_eq!(unsafe { cent_bundle_open(&mut *s.bundle, inside, 64) }, CentStatus::Overlap);
        assert_eq!(unsafe { cent_bundle_close(null_mut()) }, CentStatus::NullPointer);
    }

    #[test]
    fn test_zeroed_and_closed_storage_is_not_open() {
        let mut s = Storage::new();
        let x = &queries()[0];
        assert_eq!(s.explain(x, &CentOptions::default()), CentStatus::NotOpen);
        assert_eq!(s.open(BUNDLE), CentStatus::Ok);
        assert_eq!(unsafe { cent_bundle_close(&mut *s.bundle) }, CentStatus::Ok);
        assert_eq!(unsafe { cent_bundle_close(&mut *s.bundle) }, CentStatus::Ok, "twice");
        assert_eq!(s.explain(x, &CentOptions::default()), CentStatus::NotOpen);
    }

    #[test]
    fn test_explain_checks_every_pointer() {
        let mut s = opened();
        let x = queries()[0].clone();
        let o = CentOptions::default();
        let (b, sc, r) =
            (&*s.bundle as *const CentBundle, &mut *s.scratch as *mut CentScratch, &mut *s.result as *mut CentResult);
        let n = x.len();
        unsafe {
            assert_eq!(cent_explain(null(), x.as_ptr(), n, &o, sc, r), CentStatus::NullPointer);
            assert_eq!(cent_explain(b, null(), n, &o, sc, r), CentStatus::NullPointer);
            assert_eq!(cent_explain(b, x.as_ptr(), n, null(), sc, r), CentStatus::NullPointer);
            assert_eq!(cent_explain(b, x.as_ptr(), n, &o, null_mut(), r), CentStatus::NullPointer);
            assert_eq!(cent_explain(b, x.as_ptr(), n, &o, sc, null_mut()), CentStatus::NullPointer);
            // The result inside the scratch, the scratch over the query, the result over the bundle.
            assert_eq!(cent_explain(b, x.as_ptr(), n, &o, sc, sc.cast()), CentStatus::Overlap);
            let xs = x.as_ptr() as *mut CentScratch;
            assert_eq!(cent_explain(b, x.as_ptr(), n, &o, xs, r), CentStatus::Overlap);
            assert_eq!(cent_explain(b, x.as_ptr(), n, &o, sc, b as *mut CentResult), CentStatus::Overlap);
            let odd = x.as_ptr().cast::<u8>().add(1).cast::<f32>();
            assert_eq!(cent_explain(b, odd, n - 1, &o, sc, r), CentStatus::Misaligned);
        }
        assert_eq!(s.explain(&x, &o), CentStatus::Ok);
    }

    #[test]
    fn test_bad_queries_and_options_return_their_status_and_no_result() {
        let mut s = opened();
        let x = queries()[0].clone();
        let o = CentOptions::default();
        let refused = |s: &mut Storage, x: &[f32], o: &CentOptions| {
            let status = s.explain(x, o);
            assert_eq!(s.summary().unwrap_err(), CentStatus::NoResult, "{status:?} left a result");
            status
        };
        assert_eq!(refused(&mut s, &x[..x.len() - 1], &o), CentStatus::QueryLength);
        assert_eq!(refused(&mut s, &[], &o), CentStatus::QueryLength);
        let mut nan = x.clone();
        nan[0] = f32::NAN;
        assert_eq!(refused(&mut s, &nan, &o), CentStatus::QueryValue);
        let mut inf = x.clone();
        inf[3] = f32::INFINITY;
        assert_eq!(refused(&mut s, &inf, &o), CentStatus::QueryValue);
        // Every one-hot column set: no group has exactly one hot column.
        let all_hot: Vec<f32> = std::vec![1.0; x.len()];
        assert_eq!(refused(&mut s, &all_hot, &o), CentStatus::QueryValue);
        assert_eq!(refused(&mut s, &x, &CentOptions { answers: 0, ..o }), CentStatus::InvalidOptions);
        assert_eq!(refused(&mut s, &x, &CentOptions { immutable: 1 << 31, ..o }), CentStatus::InvalidOptions);
        let costs = [1.0f32; 3];
        let short = CentOptions { costs: costs.as_ptr(), costs_len: costs.len(), ..o };
        assert_eq!(refused(&mut s, &x, &short), CentStatus::InvalidOptions);
        let odd = CentOptions { costs: unsafe { costs.as_ptr().cast::<u8>().add(2).cast() }, costs_len: 1, ..o };
        assert_eq!(refused(&mut s, &x, &odd), CentStatus::Misaligned);
        // The current class as the desired one.
        assert_eq!(s.explain(&x, &o), CentStatus::Ok);
        let fact = s.summary().unwrap().fact as i32;
        assert_eq!(refused(&mut s, &x, &CentOptions { desired_class: fact, ..o }), CentStatus::Target);
        assert_eq!(refused(&mut s, &x, &CentOptions { desired_class: 7, ..o }), CentStatus::Target);
    }

    #[test]
    fn test_constraints_and_costs_reach_the_core() {
        let mut s = opened();
        let info = {
            let mut i = core::mem::MaybeUninit::<CentBundleInfo>::uninit();
            assert_eq!(unsafe { cent_bundle_info(&*s.bundle, i.as_mut_ptr()) }, CentStatus::Ok);
            unsafe { i.assume_init() }
        };
        let everything = 1u32.checked_shl(info.features).map_or(u32::MAX, |b| b - 1);
        for (i, x) in queries().iter().enumerate().take(12) {
            let o = CentOptions { seed: i as u64, ..CentOptions::default() };
            assert_eq!(s.explain(x, &o), CentStatus::Ok);
            let Some((first, _)) = s.answer(0).ok() else { continue };
            // Freeze what the first answer changed: no answer may change those features again.
            let frozen = CentOptions { immutable: first.changed, ..o };
            assert_eq!(s.explain(x, &frozen), CentStatus::Ok);
            for k in 0..s.summary().unwrap().answers as usize {
                assert_eq!(s.answer(k).unwrap().0.changed & first.changed, 0, "query {i} answer {k}");
            }
            // Nothing may change: no counterfactual at all.
            assert_eq!(s.explain(x, &CentOptions { immutable: everything, ..o }), CentStatus::Ok);
            assert_eq!(s.summary().unwrap().answers, 0);
            // Costs change the price of the same move.
            let costs = std::vec![10.0f32; info.features as usize];
            let dear = CentOptions { costs: costs.as_ptr(), costs_len: costs.len(), ..o };
            assert_eq!(s.explain(x, &dear), CentStatus::Ok);
        }
    }

    #[test]
    fn test_result_accessors_check_pointers_indices_and_lengths() {
        let mut s = opened();
        let fresh = CentResult::zeroed();
        let mut sum = core::mem::MaybeUninit::<CentSummary>::uninit();
        assert_eq!(unsafe { cent_result_summary(&fresh, sum.as_mut_ptr()) }, CentStatus::NoResult);
        // The first query with an answer leaves its outcome in `s.result`.
        let found = queries().iter().enumerate().any(|(i, x)| {
            let o = CentOptions { seed: i as u64, ..CentOptions::default() };
            s.explain(x, &o) == CentStatus::Ok && s.summary().unwrap().answers > 0
        });
        assert!(found, "no query has an answer");
        let n = s.summary().unwrap().answers as usize;
        let columns = s.summary().unwrap().columns as usize;
        let r = &*s.result as *const CentResult;
        let mut a = core::mem::MaybeUninit::<CentAnswer>::uninit();
        let mut values = std::vec![0.0f32; columns];
        unsafe {
            assert_eq!(cent_result_summary(null(), sum.as_mut_ptr()), CentStatus::NullPointer);
            assert_eq!(cent_result_summary(r, null_mut()), CentStatus::NullPointer);
            assert_eq!(cent_result_answer(r, n, a.as_mut_ptr()), CentStatus::Index);
            assert_eq!(cent_result_answer(r, usize::MAX, a.as_mut_ptr()), CentStatus::Index);
            assert_eq!(cent_result_answer(r, 0, null_mut()), CentStatus::NullPointer);
            assert_eq!(cent_result_values(r, 0, null_mut(), columns), CentStatus::NullPointer);
            assert_eq!(cent_result_values(r, 0, values.as_mut_ptr(), columns - 1), CentStatus::BufferTooSmall);
            assert_eq!(cent_result_values(r, n, values.as_mut_ptr(), columns), CentStatus::Index);
            assert_eq!(cent_result_values(r, 0, r as *mut f32, columns), CentStatus::Overlap);
            assert_eq!(cent_result_summary(r, r as *mut CentSummary), CentStatus::Overlap);
            assert_eq!(cent_result_values(r, 0, values.as_mut_ptr(), columns), CentStatus::Ok);
        }
    }
}
