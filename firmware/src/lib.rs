//! Firmware support shared by the three binaries (`firmware`, `corrupt`, `bench`): the embedded
//! data, the batch run, the output channel, the SysTick and stack probes, and how the program
//! ends (semihosting exit 0 or 1, also from a panic or a HardFault).
//!
//! Device data flow: flash bundle → [`cent_nostd::bundle::Bundle::from_bytes`] (validated once)
//! → per query: decode a row of [`queries`] → seeded [`batch::explain_one`] → one canonical
//! [`cent_nostd::atlas::Line`] on the [`console`].
#![no_std]

pub mod batch;
pub mod console;
pub mod data;
pub mod halt;
pub mod measure;
pub mod queries;
