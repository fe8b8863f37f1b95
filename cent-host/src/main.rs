//! `cent`: counterfactual explanations for any classifier.
//!
//! The binary edge: argument parsing, output, exit codes. The work lives in the library.

use std::process::ExitCode;

mod cli;

fn main() -> ExitCode {
    match cli::run() {
        Ok(code) => code,
        Err(e) if e.downcast_ref::<cli::StdoutClosed>().is_some() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            cli::exit_code(&e)
        }
    }
}
