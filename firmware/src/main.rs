//! The parity firmware: explains every embedded query and prints one canonical line each, then
//! `done queries=N`; exits 0, or 1 with `error: …` when anything fails. The stack high-water
//! mark goes to stderr so stdout stays byte-comparable with the host's run.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use firmware::batch::{self, Scratch};
use firmware::console::Console;
use firmware::{data, halt, measure};

#[entry]
fn main() -> ! {
    // cortex-m-rt turns this into a `&'static mut`: the scratch is static RAM, not stack.
    static mut SCRATCH: Scratch = Scratch::new();
    let mut console = Console::stdout();
    let outcome = batch::run(data::bundle(), data::queries(), SCRATCH, &mut console);
    if let Err(failure) = &outcome {
        console.failure(failure);
    }
    report_stack();
    halt::exit(outcome.is_ok())
}

#[cfg(not(feature = "defmt"))]
fn report_stack() {
    let (ram, stack) = (measure::static_ram(), measure::stack_high_water());
    Console::stderr().println(format_args!("memory static_ram={ram} stack={stack}"));
}

#[cfg(feature = "defmt")]
fn report_stack() {
    defmt::println!("memory static_ram={=usize} stack={=usize}", measure::static_ram(), measure::stack_high_water());
}
