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
            eprintln!("error: {}", message(&e));
            cli::exit_code(&e)
        }
    }
}

/// The error and its causes, `: `-separated, without a cause its error already shows (many
/// library errors print their source in their own message).
fn message(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let cause = cause.to_string();
        if text.contains(&cause) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    text
}
