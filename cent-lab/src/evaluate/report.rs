//! Text forms of evaluation results: markdown tables, the full markdown report of
//! `cent evaluate --all`, and CSV rows.

use super::{Diversity, MethodKind, MethodResult, Row, Summary, SweepPoint};
use std::fmt::Write as _;

/// One dataset × model pair's results.
#[derive(Debug, Clone, PartialEq)]
pub struct PairReport {
    pub dataset: String,
    /// `lr`, `mlp` or `onnx`.
    pub model: String,
    /// Test accuracy of the model.
    pub accuracy: f64,
    /// Test balanced accuracy of the model (mean of the per-class recalls).
    pub balanced_accuracy: f64,
    /// Loading data and models, training what was not cached, seconds.
    pub setup_seconds: f64,
    /// Encoding and labelling the pool and the yNN reference, seconds.
    pub prepare_seconds: f64,
    /// Running every method on every factual, measuring included, seconds.
    pub run_seconds: f64,
    /// CEnt's plausibility sweep, measuring included, seconds.
    pub sweep_seconds: f64,
    pub results: Vec<MethodResult>,
    /// CEnt's plausibility sweep (empty when none was run).
    pub sweep: Vec<SweepPoint>,
    /// CEnt asked for several answers per factual (when CEnt was run).
    pub diversity: Option<Diversity>,
}

/// How the report was produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Meta {
    pub command: String,
    pub factuals: usize,
    pub seed: u64,
    pub total_seconds: f64,
    /// The machine that ran it (cores, load), since latencies are wall-clock.
    pub machine: String,
    /// Relative paths of the plot files, with a caption each.
    pub plots: Vec<(String, String)>,
    /// Relative paths of the per-pair plausibility-against-sparsity plots, with a caption each.
    pub pareto_plots: Vec<(String, String)>,
}

/// Surrogate fidelity reported by the CEnt paper, (MLP, LR).
pub fn paper_fidelity(dataset: &str) -> Option<(f64, f64)> {
    match dataset {
        "adult" => Some((0.944, 0.957)),
        "compas" => Some((0.965, 0.978)),
        "credit" => Some((0.992, 0.987)),
        "heloc" => Some((0.873, 0.894)),
        _ => None,
    }
}

fn paper_value(dataset: &str, model: &str) -> Option<f64> {
    paper_fidelity(dataset).map(|(mlp, lr)| if model == "lr" { lr } else { mlp })
}

/// The project's quality goals for CEnt that `s` misses, as short phrases; `dominated` are the
/// baselines that dominate it (a goal is that none does).
pub fn missed_goals(s: &Summary, dataset: &str, model: &str, dominated: &[MethodKind]) -> Vec<String> {
    let mut missed = Vec::new();
    // A factual no person of the target class can be reached from is not a miss of the method:
    // the goal is 0.99 of the others.
    let unreachable = s.unreachable as f64 / s.factuals.max(1) as f64;
    if s.flip_rate + unreachable < 0.99 {
        missed.push(format!("flip rate {:.2} < 0.99{}", s.flip_rate, unreachable_note(s)));
    }
    if s.immutable_violation_rate > 0.0 || s.semi_immutable_violation_rate > 0.0 {
        missed.push("constraint violations".to_string());
    }
    if s.redundancy > 0.2 {
        missed.push(format!("redundancy {} > 0.2", near(s.redundancy, 0.2)));
    }
    if let (Some(f), Some(p)) = (s.fidelity, paper_value(dataset, model))
        && f < p
    {
        missed.push(format!("fidelity {f:.3} < paper {p:.3}"));
    }
    if s.ynn < 0.8 {
        missed.push(format!("yNN {} < 0.8", near(s.ynn, 0.8)));
    }
    if s.found > 0 && s.target_probability_median < 0.6 {
        missed.push(format!("p(target) median {} < 0.6", near(s.target_probability_median, 0.6)));
    }
    if s.l0 > 2.0 {
        missed.push(format!("l0 {} > 2", near(s.l0, 2.0)));
    }
    if s.unseen_value_share > 0.0 {
        missed.push(format!("unseen values {:.2}", s.unseen_value_share));
    }
    if s.link_violation_rate > 0.0 {
        missed.push(format!("link violations {:.2}", s.link_violation_rate));
    }
    if !dominated.is_empty() {
        missed.push(format!("dominated by {}", names(dominated)));
    }
    missed
}

/// `value` to two decimals, or to three when two would show the `goal` it misses (0.203 is
/// not printed as "0.20 > 0.2").
fn near(value: f64, goal: f64) -> String {
    let two = format!("{value:.2}");
    if two.parse::<f64>().is_ok_and(|v| (v - goal).abs() < 1e-9) { format!("{value:.3}") } else { two }
}

/// Method names joined by ", ", or "–" for none.
fn names(kinds: &[MethodKind]) -> String {
    if kinds.is_empty() {
        return "–".to_string();
    }
    kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
}

/// A markdown table of method summaries.
pub fn summary_table(results: &[MethodResult]) -> String {
    let mut out = String::from(
        "| method | found | flip rate | l0 | l1 | l2 | linf | latent | redundancy | immutable viol. | semi-immutable viol. | unseen values | link viol. | yNN | target-row dist. median | p(target) median | latency ms (mean / median) | fidelity |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in results {
        let s = &r.summary;
        let fidelity = s.fidelity.map_or_else(|| "–".to_string(), |f| format!("{f:.3}"));
        let _ = writeln!(
            out,
            "| {} | {}/{} | {:.2} | {:.2} | {:.3} | {:.3} | {:.3} | {:.3} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.3} | {:.2} | {:.1} / {:.1} | {} |",
            s.method.name(),
            s.found,
            s.factuals,
            s.flip_rate,
            s.l0,
            s.l1,
            s.l2,
            s.linf,
            s.latent,
            s.redundancy,
            s.immutable_violation_rate,
            s.semi_immutable_violation_rate,
            s.unseen_value_share,
            s.link_violation_rate,
            s.ynn,
            s.target_row_distance_median,
            s.target_probability_median,
            s.latency_ms_mean,
            s.latency_ms_median,
            fidelity
        );
    }
    out
}

/// ` (N unreachable)` when some factuals have no reachable target-class person, else nothing.
fn unreachable_note(s: &Summary) -> String {
    if s.unreachable > 0 { format!(" ({} unreachable)", s.unreachable) } else { String::new() }
}

/// The headline table: CEnt on every pair, against the quality goals and the paper.
fn headline(pairs: &[PairReport]) -> String {
    let mut out = String::from(
        "| dataset | model | test acc. (balanced) | flip rate | l0 | l1 | yNN | p(target) median | redundancy | immutable / semi / link viol. | unseen values | fidelity (paper) | latency ms (mean) | dominated by | goals missed |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n",
    );
    for p in pairs {
        let Some(r) = p.results.iter().find(|r| r.summary.method == MethodKind::Cent) else { continue };
        let s = &r.summary;
        let paper = paper_value(&p.dataset, &p.model).map_or_else(|| "–".into(), |v| format!("{v:.3}"));
        let fidelity = s.fidelity.map_or_else(|| "–".into(), |f| format!("{f:.3}"));
        let dominated = super::cent_dominated_by(&p.results).unwrap_or_default();
        let missed = missed_goals(s, &p.dataset, &p.model, &dominated);
        let missed = if missed.is_empty() { "none".to_string() } else { missed.join("; ") };
        let dominated = names(&dominated);
        let _ = writeln!(
            out,
            "| {} | {} | {:.3} ({:.3}) | {:.2}{} | {:.2} | {:.3} | {:.2} | {:.2} | {:.2} | {:.2} / {:.2} / {:.2} | {:.2} | {fidelity} ({paper}) | {:.1} | {dominated} | {missed} |",
            p.dataset,
            p.model,
            p.accuracy,
            p.balanced_accuracy,
            s.flip_rate,
            unreachable_note(s),
            s.l0,
            s.l1,
            s.ynn,
            s.target_probability_median,
            s.redundancy,
            s.immutable_violation_rate,
            s.semi_immutable_violation_rate,
            s.link_violation_rate,
            s.unseen_value_share,
            s.latency_ms_mean
        );
    }
    out
}

/// The full markdown report of `cent evaluate --all`.
/// CEnt's answers when three are asked for: how many, and how far apart their levers are.
pub fn diversity_table(pairs: &[PairReport]) -> String {
    let mut out = String::from(
        "## Different levers\n\nCEnt asked for several answers per factual (`--n`): the mean number of verified answers, the \
         factuals with two or more, the mean pairwise Jaccard distance between their sets of changed features (1: no \
         feature in common), and the share of answer pairs that change exactly the same features.\n\n\
         | dataset | model | n | answers (mean) | factuals with ≥ 2 | Jaccard distance | same-lever pairs |\n|---|---|---:|---:|---:|---:|---:|\n",
    );
    for p in pairs {
        if let Some(d) = &p.diversity {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:.2} | {} | {:.2} | {:.2} |",
                p.dataset,
                p.model,
                d.n,
                d.answers_mean,
                d.factuals_with_several,
                d.jaccard_distance,
                d.same_levers_share
            );
        }
    }
    out
}

pub fn markdown(pairs: &[PairReport], meta: &Meta) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Evaluation results\n");
    let _ = writeln!(out, "Regenerate with:\n\n```sh\n{}\n```\n", meta.command);
    let _ = writeln!(
        out,
        "{} factuals per dataset × model pair drawn from the test split (seed {}), both predicted classes \
         alternating; target = the other class. Constraints: each schema's defaults. Whole run: {:.0} s wall, \
         including loading and any training. Latencies are wall-clock on the machine that ran it: {}.\n",
        meta.factuals, meta.seed, meta.total_seconds, meta.machine
    );
    let _ = writeln!(out, "## CEnt on every pair\n\n{}", headline(pairs));
    let _ = writeln!(out, "{}", diversity_table(pairs));
    let _ = writeln!(out, "## Every method, per pair\n");
    for p in pairs {
        let _ = writeln!(
            out,
            "### {} × {}\n\nTest accuracy {:.3}, balanced accuracy {:.3}; setup {:.1} s, pool and reference {:.1} s, methods {:.1} s, \
             CEnt's plausibility sweep {:.1} s.\n\n{}",
            p.dataset,
            p.model,
            p.accuracy,
            p.balanced_accuracy,
            p.setup_seconds,
            p.prepare_seconds,
            p.run_seconds,
            p.sweep_seconds,
            summary_table(&p.results)
        );
    }
    if !meta.plots.is_empty() {
        let _ = writeln!(out, "## Distributions over all pairs\n");
        for (path, caption) in &meta.plots {
            let _ = writeln!(out, "![{caption}]({path})\n");
        }
    }
    if !meta.pareto_plots.is_empty() {
        let _ = writeln!(out, "## Plausibility against sparsity\n\n{PARETO_TEXT}\n");
        for (path, caption) in &meta.pareto_plots {
            let _ = writeln!(out, "![{caption}]({path})\n");
        }
    }
    out.push_str(DEFINITIONS);
    out
}

/// What the plausibility plots show.
const PARETO_TEXT: &str = "Per pair, each method's mean l0 (x, fewer changes to the left) against its yNN (y, \
more plausible up). CEnt runs once per plausibility setting of the sweep on the same factuals; its points are joined \
in sweep order and labelled with the setting, the configured default marked. Up and to the left is better.";

/// How every column is defined (kept next to the code that computes it).
const DEFINITIONS: &str = "## Definitions\n\n\
- **found**: factuals for which the method returned a counterfactual. Every method's output is re-verified with the \
model and the core's constraint check before it counts as found; a factual without one counts as not flipped.\n\
- **flip rate**: share of *all* factuals whose counterfactual the model assigns to the target class (re-checked).\n\
- **l0**: changed logical features (a one-hot group counts once). **l1**, **l2** (not squared), **linf**: distances over \
the *encoded* columns (min-max scaled numbers in [0, 1], binary 0/1, one-hot columns as they are: switching a category \
adds 2 to l1, √2 to l2, 1 to linf).\n\
- **latent**: Euclidean distance between the VAE means of the factual and the counterfactual (the VAE CEnt uses).\n\
- **redundancy**: changed features that can each, alone, be set back to the factual's value while the model still \
predicts the target (argmax) and no schema link breaks; mean count per counterfactual. A change CEnt keeps to reach its \
required probability (`--min-probability`) counts as redundant here.\n\
- **unseen values**: of the changed numbers of features with observed support (`support = \"observed\"`, the default \
for whole numbers), the share whose value no training row has.\n\
- **link viol.**: share of counterfactuals whose move makes a combination of linked features (`[[link]]` in the \
schema) that no training row has (or fewer than the link's `min_rows`).\n\
- **immutable / semi-immutable viol.**: share of counterfactuals whose decoded values change an immutable feature / move \
a one-direction feature the wrong way or make a forbidden category transition.\n\
- **yNN**: share of the 5 nearest dataset rows (training + test, encoded, Euclidean) of the counterfactual that the model \
assigns to the target class.\n\
- **target-row dist.**: Euclidean distance (encoded columns) from the counterfactual to the nearest dataset row \
(training + test) that the model assigns to the target class; median over found counterfactuals.\n\
- **dominated by** (headline): the baselines at least as good as CEnt on flip rate (higher), mean l0 (lower) and yNN \
(higher), and strictly better on one of them (\"–\": none).\n\
- **latency**: wall time of one method call for one factual; training and encoding the pool are excluded.\n\
- **fidelity** (CEnt only): accuracy of the local surrogate tree against the model on held-out latent neighbours \
(20 %), mean over factuals.\n\
- Distances, redundancy, violation rates, yNN and fidelity are means over the found counterfactuals; p(target) is the median over them of the model's probability of the target class.\n";

/// Header of [`csv_rows`].
pub const CSV_HEADER: &str = "dataset,model,method,test_row,fact_class,target_class,found,flipped,latency_ms,l0,l1,l2,\
linf,latent,redundancy,immutable_violation,semi_immutable_violation,feasible,ynn,target_row_distance,target_probability,\
unseen_values,observed_changes,link_violations,fidelity,reason";

/// One CSV line per factual (no header); absent values are empty fields.
pub fn csv_rows(dataset: &str, model: &str, method: MethodKind, rows: &[Row]) -> String {
    let mut out = String::new();
    for r in rows {
        let m = r.measures.as_ref();
        let num = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v}"));
        let flag = |v: Option<bool>| v.map_or_else(String::new, |b| b.to_string());
        let reason = r.reason.as_deref().unwrap_or("").replace('"', "'");
        let _ = writeln!(
            out,
            "{dataset},{model},{},{},{},{},{},{},{:.3},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},\"{reason}\"",
            method.name(),
            r.test_row,
            r.fact_class,
            r.target_class,
            r.found,
            r.flipped,
            r.latency_ms,
            m.map_or_else(String::new, |m| m.l0.to_string()),
            num(m.map(|m| m.l1)),
            num(m.map(|m| m.l2)),
            num(m.map(|m| m.linf)),
            num(m.map(|m| m.latent)),
            m.map_or_else(String::new, |m| m.redundancy.to_string()),
            flag(m.map(|m| m.violations.immutable)),
            flag(m.map(|m| m.violations.semi_immutable)),
            flag(m.map(|m| m.feasible)),
            num(m.map(|m| m.ynn)),
            num(m.and_then(|m| m.target_row_distance)),
            num(m.map(|m| m.target_probability)),
            m.map_or_else(String::new, |m| m.unseen_values.to_string()),
            m.map_or_else(String::new, |m| m.observed_changes.to_string()),
            m.map_or_else(String::new, |m| m.link_violations.to_string()),
            num(r.fidelity),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::summarize;
    use super::*;
    use crate::metrics::{Measures, Violations};

    fn found_row(l1: f64) -> Row {
        let m = Measures {
            flipped: true,
            l0: 2,
            l1,
            l2: 1.0,
            linf: 0.5,
            latent: 0.25,
            redundancy: 0,
            violations: Violations::default(),
            feasible: true,
            ynn: 1.0,
            target_row_distance: Some(0.5),
            target_probability: 0.9,
            unseen_values: 0,
            observed_changes: 0,
            link_violations: 0,
        };
        Row {
            test_row: 4,
            fact_class: 0,
            target_class: 1,
            found: true,
            flipped: true,
            latency_ms: 2.5,
            measures: Some(m),
            counterfactual: None,
            fidelity: Some(0.99),
            reason: None,
            unreachable: false,
        }
    }

    #[test]
    fn test_goals_name_what_is_missed() {
        let mut s = summarize(MethodKind::Cent, &[found_row(1.0)]);
        assert!(missed_goals(&s, "adult", "lr", &[]).is_empty());
        s.fidelity = Some(0.9);
        s.ynn = 0.5;
        let missed = missed_goals(&s, "adult", "lr", &[]);
        assert_eq!(missed, vec!["fidelity 0.900 < paper 0.957".to_string(), "yNN 0.50 < 0.8".to_string()]);
        let missed = missed_goals(&s, "adult", "lr", &[MethodKind::Face, MethodKind::Nun]);
        assert_eq!(missed.last().map(String::as_str), Some("dominated by face, nun"));
        // A value that two decimals would round onto its goal is shown with three.
        (s.fidelity, s.ynn, s.redundancy, s.l0) = (None, 0.798, 12.0 / 59.0, 2.05);
        let missed = missed_goals(&s, "adult", "lr", &[]);
        assert_eq!(missed, vec!["redundancy 0.203 > 0.2", "yNN 0.798 < 0.8", "l0 2.05 > 2"]);
    }

    #[test]
    fn test_flip_goal_excuses_only_unreachable_factuals() {
        // 100 factuals, 60 flipped: a miss while fewer than 39 of the 40 others are unreachable.
        let mut s = summarize(MethodKind::Cent, &[found_row(1.0)]);
        (s.factuals, s.flip_rate) = (100, 0.6);
        for (unreachable, missed) in [(0, true), (38, true), (39, false), (40, false)] {
            s.unreachable = unreachable;
            let goals = missed_goals(&s, "compas", "lr", &[]);
            assert_eq!(
                goals.iter().any(|g| g.starts_with("flip rate 0.60 < 0.99")),
                missed,
                "{unreachable}: {goals:?}"
            );
        }
        s.unreachable = 38;
        assert!(missed_goals(&s, "compas", "lr", &[]).contains(&"flip rate 0.60 < 0.99 (38 unreachable)".to_string()));
    }

    #[test]
    fn test_csv_has_one_line_per_row_with_the_header_width() {
        let mut failed = found_row(0.0);
        (failed.found, failed.flipped, failed.measures, failed.fidelity) = (false, false, None, None);
        failed.reason = Some("no \"luck\"".into());
        let text = csv_rows("adult", "lr", MethodKind::Gs, &[found_row(1.5), failed]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        let width = CSV_HEADER.split(',').count();
        assert!(lines.iter().all(|l| l.split(',').count() == width), "{text}");
        assert!(lines[0].starts_with("adult,lr,gs,4,0,1,true,true,2.500,2,1.5,"), "{}", lines[0]);
        assert!(lines[1].ends_with(",,\"no 'luck'\""), "{}", lines[1]);
    }

    #[test]
    fn test_markdown_has_the_headline_and_every_pair() {
        let result = MethodResult { summary: summarize(MethodKind::Cent, &[found_row(1.0)]), rows: vec![] };
        // A baseline with one change fewer, as good otherwise: it dominates CEnt.
        let mut sparser = found_row(1.0);
        sparser.measures.as_mut().expect("found").l0 = 1;
        let face = MethodResult { summary: summarize(MethodKind::Face, &[sparser]), rows: vec![] };
        let pair = PairReport {
            dataset: "compas".into(),
            model: "mlp".into(),
            accuracy: 0.7,
            balanced_accuracy: 0.65,
            setup_seconds: 1.0,
            prepare_seconds: 0.5,
            run_seconds: 2.0,
            sweep_seconds: 0.0,
            results: vec![result, face],
            sweep: vec![],
            diversity: None,
        };
        let meta = Meta {
            command: "cent evaluate --all".into(),
            factuals: 1,
            seed: 1,
            total_seconds: 3.0,
            machine: "2 cores".into(),
            plots: vec![("plots/l1.svg".into(), "l1".into())],
            pareto_plots: vec![("plots/pareto-compas-mlp.svg".into(), "compas × mlp".into())],
        };
        let md = markdown(&[pair], &meta);
        assert!(md.contains("| compas | mlp | 0.700 (0.650) | 1.00 |"), "{md}");
        assert!(md.contains("0.990 (0.965)") && md.contains("### compas × mlp") && md.contains("![l1](plots/l1.svg)"));
        assert!(md.contains("| face | dominated by face |"), "{md}");
        assert!(
            md.contains("## Plausibility against sparsity") && md.contains("(plots/pareto-compas-mlp.svg)"),
            "{md}"
        );
    }
}
