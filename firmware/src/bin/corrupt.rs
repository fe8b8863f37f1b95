//! The parity firmware on a bundle with one flipped bit ([`firmware::data::corrupt_bundle`]):
//! it must print `error: bundle: …` and exit 1. Pins that a damaged flash image is refused
//! before any explanation runs.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use firmware::batch::{self, Scratch};
use firmware::console::Console;
use firmware::{data, halt};

#[entry]
fn main() -> ! {
    static mut SCRATCH: Scratch = Scratch::new();
    let mut console = Console::stdout();
    let outcome = batch::run(data::corrupt_bundle(), data::queries(), SCRATCH, &mut console);
    if let Err(failure) = &outcome {
        console.failure(failure);
    }
    halt::exit(outcome.is_ok())
}
