//! The library's progress, drawn as indicatif bars on stderr.

use cent_host::progress::Progress;
use indicatif::{ProgressBar, ProgressStyle};
use std::sync::Mutex;

/// One bar per stage (a model's training epochs, say), cleared when the stage ends; nothing at
/// all when quiet. Indicatif hides bars by itself when stderr is not a terminal.
#[derive(Debug)]
pub struct Bars {
    quiet: bool,
    current: Mutex<Option<ProgressBar>>,
}

impl Bars {
    pub fn new(quiet: bool) -> Self {
        Self { quiet, current: Mutex::new(None) }
    }

    fn with(&self, f: impl FnOnce(&mut Option<ProgressBar>)) {
        // A poisoned lock only means another stage panicked while drawing; the bar is cosmetic.
        let mut guard = self.current.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut guard);
    }
}

impl Progress for Bars {
    fn begin(&self, label: &str, total: u64, unit: &str) {
        if self.quiet {
            return;
        }
        let template = format!("{{msg:28}} [{{bar:30}}] {{pos}}/{{len}} {unit} ({{elapsed}})");
        let style = ProgressStyle::with_template(&template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        let bar = ProgressBar::new(total).with_style(style).with_message(label.to_string());
        self.with(|current| {
            if let Some(old) = current.replace(bar) {
                old.finish_and_clear();
            }
        });
    }

    fn advance(&self, steps: u64) {
        self.with(|current| {
            if let Some(bar) = current {
                bar.inc(steps);
            }
        });
    }

    fn end(&self) {
        self.with(|current| {
            if let Some(bar) = current.take() {
                bar.finish_and_clear();
            }
        });
    }
}
