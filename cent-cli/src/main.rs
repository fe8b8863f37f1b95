//! `cent`: counterfactual explanations for any classifier.
//!
//! The binary edge: argument parsing, output, exit codes. The work lives in the library.

use std::process::ExitCode;

mod cli;

fn main() -> ExitCode {
    match cli::run() {
        Ok(code) => code,
        Err(e) if e.downcast_ref::<cli::StdoutClosed>().is_some() || broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", message(&e));
            cli::exit_code(&e)
        }
    }
}

/// A write into a closed pipe among the error's causes: the reader of stdout (`head`) has
/// stopped reading, which ends the command quietly. (Writing a file never fails this way.)
fn broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
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
