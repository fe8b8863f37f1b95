//! The output channel: plain text over semihosting stdout, or defmt frames with the `defmt`
//! feature (decode with `defmt-print -e ELF`).
//!
//! Plain text is the contract the parity test reads: one [`Line`] per query, then
//! `done queries=N`, or `error: <failure>`. The defmt build prints the same fields as
//! structured frames instead (smaller image, not byte-comparable).

use crate::batch::Failure;
use crate::measure::Report;
use cent_nostd::atlas::Line;

#[cfg(not(feature = "defmt"))]
pub use text::Console;

#[cfg(feature = "defmt")]
pub use frames::Console;

#[cfg(not(feature = "defmt"))]
mod text {
    use super::{Failure, Line, Report};
    use core::fmt::{self, Write};
    use cortex_m_semihosting::hio::{self, HostStream};

    /// Bytes gathered before one semihosting write: a long line costs a few host calls instead
    /// of one per formatted fragment.
    const BUFFER: usize = 128;

    /// A buffered writer to the host's stdout (or stderr). Writes are dropped when the host
    /// has no such stream; there is nowhere else to report that.
    pub struct Console {
        stream: Option<HostStream>,
        buf: [u8; BUFFER],
        len: usize,
    }

    impl fmt::Debug for Console {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("Console").field("open", &self.stream.is_some()).field("buffered", &self.len).finish()
        }
    }

    impl Console {
        /// The host's standard output.
        pub fn stdout() -> Self {
            Self::on(hio::hstdout().ok())
        }

        /// The host's standard error: diagnostics that must stay out of the compared output.
        pub fn stderr() -> Self {
            Self::on(hio::hstderr().ok())
        }

        fn on(stream: Option<HostStream>) -> Self {
            Console { stream, buf: [0; BUFFER], len: 0 }
        }

        pub fn line(&mut self, line: &Line<'_>) {
            self.println(format_args!("{line}"));
        }

        pub fn done(&mut self, queries: u32) {
            self.println(format_args!("done queries={queries}"));
        }

        pub fn failure(&mut self, failure: &Failure) {
            self.println(format_args!("error: {failure}"));
        }

        pub fn report(&mut self, report: &Report) {
            self.println(format_args!("{report}"));
        }

        /// Writes `args` and a newline, then flushes.
        pub fn println(&mut self, args: fmt::Arguments<'_>) {
            // Formatting into this writer cannot fail; a lost host stream is ignored (see above).
            let _ = self.write_fmt(args);
            let _ = self.write_str("\n");
            self.flush();
        }

        pub fn flush(&mut self) {
            if let Some(stream) = self.stream.as_mut() {
                let _ = stream.write_all(&self.buf[..self.len]);
            }
            self.len = 0;
        }
    }

    impl Write for Console {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            for &b in s.as_bytes() {
                if self.len == BUFFER {
                    self.flush();
                }
                self.buf[self.len] = b;
                self.len += 1;
            }
            Ok(())
        }
    }
}

#[cfg(feature = "defmt")]
mod frames {
    use super::{Failure, Line, Report};
    use cent_nostd::capacity::COLUMNS;

    /// defmt's global logger (semihosting) behind the same interface as the text console.
    #[derive(Debug)]
    pub struct Console;

    impl Console {
        pub fn stdout() -> Self {
            Console
        }

        /// defmt has one stream; diagnostics share it.
        pub fn stderr() -> Self {
            Console
        }

        pub fn line(&mut self, line: &Line<'_>) {
            let (s, results) = match line.outcome {
                Ok(ok) => ok,
                Err(e) => return defmt::println!("q={=u32} error={}", line.index, e),
            };
            defmt::println!(
                "q={=u32} anchor={=u8} fact={=u8} examined={=u8} rejected={=u8} n={=usize} not_found={}",
                line.index,
                s.anchor,
                s.fact,
                s.examined,
                s.rejected,
                results.len(),
                s.not_found
            );
            for r in results {
                let bits: heapless::Vec<u32, COLUMNS> = r.x.iter().map(|v| v.to_bits()).collect();
                defmt::println!(
                    "  | leaf={=u16} cost={=u32} class={} changed={=u32:x} x={=[?]:08x}",
                    r.leaf,
                    r.cost,
                    r.class,
                    r.changed,
                    bits.as_slice()
                );
            }
        }

        pub fn done(&mut self, queries: u32) {
            defmt::println!("done queries={=u32}", queries);
        }

        pub fn failure(&mut self, failure: &Failure) {
            defmt::println!("error: {}", failure);
        }

        pub fn report(&mut self, report: &Report) {
            defmt::println!("{}", report);
        }

        pub fn flush(&mut self) {}
    }
}
