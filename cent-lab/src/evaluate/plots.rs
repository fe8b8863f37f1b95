//! SVG plots: box plots of per-factual metric distributions, one file per metric, one box per
//! method (found counterfactuals of every dataset × model pair pooled); and per pair, CEnt's
//! plausibility sweep against the baselines on mean l0 and yNN.

use super::MethodKind;
use super::report::PairReport;
use crate::metrics::Measures;
use plotters::prelude::*;
use std::path::Path;

/// Why a plot could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw {file}: {message}")]
pub struct PlotError {
    pub file: String,
    pub message: String,
}

/// A metric to plot: file stem, caption, axis label, log scale, and how to read it.
struct Metric {
    stem: &'static str,
    caption: &'static str,
    axis: &'static str,
    log: bool,
    value: fn(&Measures, f64) -> f64,
}

const METRICS: [Metric; 6] = [
    Metric { stem: "l1", caption: "l1 distance (encoded units)", axis: "l1", log: false, value: |m, _| m.l1 },
    Metric { stem: "l0", caption: "changed features (l0)", axis: "l0", log: false, value: |m, _| m.l0 as f64 },
    Metric {
        stem: "latent",
        caption: "latent distance (VAE means)",
        axis: "latent distance",
        log: false,
        value: |m, _| m.latent,
    },
    Metric { stem: "ynn", caption: "yNN (k = 5)", axis: "yNN", log: false, value: |m, _| m.ynn },
    Metric {
        stem: "redundancy",
        caption: "redundant changes per counterfactual",
        axis: "redundancy",
        log: false,
        value: |m, _| m.redundancy as f64,
    },
    Metric {
        stem: "latency",
        caption: "latency per factual (ms, log scale)",
        axis: "ms",
        log: true,
        value: |_, latency| latency,
    },
];

/// Writes one SVG per metric into `dir`; returns each file's name and caption.
///
/// # Errors
/// [`PlotError`] naming the file when it cannot be written.
pub fn write_all(dir: &Path, pairs: &[PairReport]) -> Result<Vec<(String, String)>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|e| PlotError { file: dir.display().to_string(), message: e.to_string() })?;
    let mut written = Vec::new();
    for metric in &METRICS {
        let series = collect(pairs, metric);
        let file = format!("{}.svg", metric.stem);
        draw(&dir.join(&file), metric, &series)
            .map_err(|message| PlotError { file: dir.join(&file).display().to_string(), message })?;
        written.push((file, metric.caption.to_string()));
    }
    Ok(written)
}

/// Writes `pareto-<dataset>-<model>.svg` into `dir` for every pair with a plausibility sweep;
/// returns each file's name and caption.
///
/// # Errors
/// [`PlotError`] naming the file when it cannot be written.
pub fn write_pareto(dir: &Path, pairs: &[PairReport]) -> Result<Vec<(String, String)>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|e| PlotError { file: dir.display().to_string(), message: e.to_string() })?;
    let mut written = Vec::new();
    for pair in pairs.iter().filter(|p| !p.sweep.is_empty()) {
        let file = format!("pareto-{}-{}.svg", pair.dataset, pair.model);
        draw_pareto(&dir.join(&file), pair)
            .map_err(|message| PlotError { file: dir.join(&file).display().to_string(), message })?;
        written.push((file, format!("{} × {}: mean l0 against yNN", pair.dataset, pair.model)));
    }
    Ok(written)
}

/// One pair's scatter: a labelled triangle per baseline, CEnt's sweep as labelled dots joined
/// in sweep order, and a square around CEnt's default setting.
fn draw_pareto(path: &Path, pair: &PairReport) -> Result<(), String> {
    let baselines: Vec<(&str, f64, f64)> = pair
        .results
        .iter()
        .map(|r| &r.summary)
        .filter(|s| s.method != MethodKind::Cent)
        .map(|s| (s.method.name(), s.l0, s.ynn))
        .collect();
    let sweep: Vec<(f64, f64)> = pair.sweep.iter().map(|p| (p.summary.l0, p.summary.ynn)).collect();
    let default =
        pair.results.iter().find(|r| r.summary.method == MethodKind::Cent).map(|r| (r.summary.l0, r.summary.ynn));
    let x_max = baselines.iter().map(|b| b.1).chain(sweep.iter().map(|p| p.0)).fold(1.0, f64::max);
    let root = SVGBackend::new(path, (720, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let caption = format!("{} × {}: plausibility against sparsity", pair.dataset, pair.model);
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 20))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..(x_max * 1.15).ceil(), -0.05..1.05)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("mean l0 (changed features)")
        .y_desc("yNN (k = 5)")
        .light_line_style(WHITE)
        .draw()
        .map_err(|e| e.to_string())?;
    let label = ("sans-serif", 13).into_font();
    chart
        .draw_series(baselines.iter().map(|&(name, x, y)| {
            EmptyElement::at((x, y))
                + TriangleMarker::new((0, 0), 6, BLACK.filled())
                + Text::new(name.to_string(), (8, -4), label.clone())
        }))
        .map_err(|e| e.to_string())?;
    chart.draw_series(std::iter::once(PathElement::new(sweep.clone(), RED))).map_err(|e| e.to_string())?;
    chart
        .draw_series(sweep.iter().map(|&(x, y)| EmptyElement::at((x, y)) + Circle::new((0, 0), 4, RED.filled())))
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(
            sweep_labels(pair)
                .into_iter()
                .map(|(text, (x, y))| EmptyElement::at((x, y)) + Text::new(text, (8, 6), label.clone().color(&RED))),
        )
        .map_err(|e| e.to_string())?;
    if let Some((x, y)) = default {
        let mark = EmptyElement::at((x, y))
            + Rectangle::new([(-8, -8), (8, 8)], RED.stroke_width(2))
            + Text::new("default".to_string(), (-24, -22), label.clone().color(&RED));
        chart.draw_series(std::iter::once(mark)).map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())
}

/// One label per distinct point of the sweep, `cent` and the settings that land on it (in
/// sweep order), so that settings with the same summary do not overprint each other.
fn sweep_labels(pair: &PairReport) -> Vec<(String, (f64, f64))> {
    let mut labels: Vec<(String, (f64, f64))> = Vec::new();
    for p in &pair.sweep {
        let at = (p.summary.l0, p.summary.ynn);
        match labels.iter_mut().find(|(_, point)| *point == at) {
            Some((text, _)) => *text = format!("{text}, {}", p.plausibility),
            None => labels.push((format!("cent {}", p.plausibility), at)),
        }
    }
    labels
}

/// Per method (in [`MethodKind::ALL`] order, those present only), the metric's values.
fn collect(pairs: &[PairReport], metric: &Metric) -> Vec<(String, Vec<f32>)> {
    let mut out = Vec::new();
    for kind in MethodKind::ALL {
        let values: Vec<f32> = pairs
            .iter()
            .flat_map(|p| p.results.iter().filter(|r| r.summary.method == kind))
            .flat_map(|r| r.rows.iter())
            .filter_map(|row| row.measures.as_ref().map(|m| (metric.value)(m, row.latency_ms) as f32))
            .filter(|v| v.is_finite())
            .collect();
        if !values.is_empty() {
            out.push((kind.name().to_string(), values));
        }
    }
    out
}

fn draw(path: &Path, metric: &Metric, series: &[(String, Vec<f32>)]) -> Result<(), String> {
    let root = SVGBackend::new(path, (720, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let names: Vec<String> = series.iter().map(|(n, _)| n.clone()).collect();
    let (lo, hi) = bounds(series, metric.log);
    let mut chart = ChartBuilder::on(&root);
    chart.caption(metric.caption, ("sans-serif", 20)).margin(12).x_label_area_size(36).y_label_area_size(56);
    if metric.log {
        let mut c =
            chart.build_cartesian_2d(names[..].into_segmented(), (lo..hi).log_scale()).map_err(|e| e.to_string())?;
        c.configure_mesh().y_desc(metric.axis).light_line_style(WHITE).draw().map_err(|e| e.to_string())?;
        // One box per method: quartiles, whiskers as plotters draws them.
        let boxes = series.iter().map(|(name, v)| {
            Boxplot::new_vertical(SegmentValue::CenterOf(name), &Quartiles::new(v)).width(28).whisker_width(0.6)
        });
        c.draw_series(boxes).map_err(|e| e.to_string())?;
    } else {
        let mut c = chart.build_cartesian_2d(names[..].into_segmented(), lo..hi).map_err(|e| e.to_string())?;
        c.configure_mesh().y_desc(metric.axis).light_line_style(WHITE).draw().map_err(|e| e.to_string())?;
        // One box per method: quartiles, whiskers as plotters draws them.
        let boxes = series.iter().map(|(name, v)| {
            Boxplot::new_vertical(SegmentValue::CenterOf(name), &Quartiles::new(v)).width(28).whisker_width(0.6)
        });
        c.draw_series(boxes).map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())
}

/// The value axis: all values with a margin; strictly positive for a log scale.
fn bounds(series: &[(String, Vec<f32>)], log: bool) -> (f32, f32) {
    let all = series.iter().flat_map(|(_, v)| v.iter().copied());
    let (mut lo, mut hi) = all.fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    if !lo.is_finite() || !hi.is_finite() {
        (lo, hi) = (0.0, 1.0);
    }
    if log {
        let lo = lo.max(1e-3);
        return (lo / 1.5, hi.max(lo * 10.0) * 1.5);
    }
    let pad = ((hi - lo) * 0.05).max(0.05);
    (lo - pad, hi + pad)
}

#[cfg(test)]
mod tests {
    use super::super::{MethodResult, Row, summarize};
    use super::*;
    use crate::metrics::Violations;

    fn result(kind: MethodKind, l1s: &[f64]) -> MethodResult {
        let rows: Vec<Row> = l1s
            .iter()
            .map(|&l1| Row {
                test_row: 0,
                fact_class: 0,
                target_class: 1,
                found: true,
                flipped: true,
                latency_ms: 1.0 + l1,
                measures: Some(Measures {
                    flipped: true,
                    l0: 1,
                    l1,
                    l2: l1,
                    linf: l1,
                    latent: l1,
                    redundancy: 0,
                    violations: Violations::default(),
                    feasible: true,
                    ynn: 1.0,
                    target_row_distance: Some(0.5),
                    target_probability: 0.6,
                    unseen_values: 0,
                    observed_changes: 0,
                    link_violations: 0,
                }),
                counterfactual: None,
                fidelity: None,
                reason: None,
                unreachable: false,
            })
            .collect();
        MethodResult { summary: summarize(kind, &rows), rows }
    }

    #[test]
    fn test_writes_one_svg_per_metric_with_every_method() {
        let pair = PairReport {
            dataset: "adult".into(),
            model: "lr".into(),
            accuracy: 0.8,
            balanced_accuracy: 0.75,
            setup_seconds: 0.0,
            prepare_seconds: 0.0,
            run_seconds: 0.0,
            sweep_seconds: 0.0,
            results: vec![result(MethodKind::Cent, &[0.1, 0.2, 0.4]), result(MethodKind::Nun, &[1.0, 2.0])],
            sweep: vec![],
            diversity: None,
        };
        let dir = std::env::temp_dir().join(format!("cent-plots-{}", std::process::id()));
        let files = write_all(&dir, &[pair]).expect("plots are written");
        assert_eq!(files.len(), METRICS.len());
        let svg = std::fs::read_to_string(dir.join("l1.svg")).expect("l1.svg exists");
        assert!(
            svg.starts_with("<svg") && svg.contains("cent") && svg.contains("nun"),
            "{}",
            &svg[..200.min(svg.len())]
        );
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn test_log_bounds_stay_positive() {
        let (lo, hi) = bounds(&[("a".into(), vec![0.0, 5.0])], true);
        assert!(lo > 0.0 && hi > 5.0);
        let (lo, hi) = bounds(&[], false);
        assert!(lo < 0.0 && hi > 1.0);
    }
}
