//! Progress of long work (training, loading, batches), reported to whoever drives the library:
//! the CLI draws bars, a binding may forward it, a test ignores it.
//!
//! Work runs in stages; a stage has a label, a total of units and advances step by step. The
//! library never decides how progress is shown, or whether.

/// Receives the progress of long work. Every method has an empty default, so an implementation
/// overrides only what it shows.
pub trait Progress {
    /// A stage of `total` `unit`s starts (e.g. `"training VAE on adult"`, 40, `"epochs"`).
    fn begin(&self, label: &str, total: u64, unit: &str) {
        let _ = (label, total, unit);
    }

    /// `steps` more units of the current stage are done.
    fn advance(&self, steps: u64) {
        let _ = steps;
    }

    /// The current stage is over.
    fn end(&self) {}
}

/// Reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Progress for Silent {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// Records every call, to check what a stage reports.
    #[derive(Default)]
    struct Log(RefCell<Vec<String>>);

    impl Progress for Log {
        fn begin(&self, label: &str, total: u64, unit: &str) {
            self.0.borrow_mut().push(format!("begin {label} {total} {unit}"));
        }
        fn advance(&self, steps: u64) {
            self.0.borrow_mut().push(format!("advance {steps}"));
        }
        fn end(&self) {
            self.0.borrow_mut().push("end".into());
        }
    }

    #[test]
    fn vae_training_reports_one_step_per_epoch() {
        let x: Vec<f32> = (0..60).map(|i| (i % 7) as f32 / 7.0).collect();
        let mut config = crate::vae::VaeConfig::new(vec![4], 2);
        config.epochs = 3;
        let log = Log::default();
        log.begin("vae", config.epochs as u64, "epochs");
        crate::vae::train(&x, 6, &config, Some(&log)).expect("trains");
        log.end();
        let calls = log.0.into_inner();
        assert_eq!(calls, ["begin vae 3 epochs", "advance 1", "advance 1", "advance 1", "end"]);
    }
}
