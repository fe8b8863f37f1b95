//! Times every embedded query's explanation with SysTick and reports one line:
//! `bench calls=N ticks=T instr_per_call=I max_instr=M load_instr=L static_ram=R stack=S`.
//! Run under `-icount shift=0` (see `scripts/device-report.sh`) for deterministic counts.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use firmware::batch::{self, Failure, Scratch};
use firmware::console::Console;
use firmware::measure::{self, Clock, Report};
use firmware::{data, halt};

#[entry]
fn main() -> ! {
    static mut SCRATCH: Scratch = Scratch::new();
    let mut console = Console::stdout();
    let outcome = bench(SCRATCH);
    match &outcome {
        Ok(report) => console.report(report),
        Err(failure) => console.failure(failure),
    }
    halt::exit(outcome.is_ok())
}

/// Loads the bundle once (timed), then explains each query once, timing each call (its row
/// decode and `explain`) on its own so the loop itself stays outside the count.
fn bench(scratch: &mut Scratch) -> Result<Report, Failure> {
    let core = cortex_m::Peripherals::take().ok_or(Failure::Peripherals)?;
    let clock = Clock::start(core.SYST);
    let start = clock.now();
    let (bundle, queries) = batch::load(data::bundle(), data::queries())?;
    let mut report = Report { load_ticks: clock.now() - start, ..Report::default() };
    let model = bundle.model();
    let query = bundle.schema.default_query();
    for index in 0..queries.len() {
        let start = clock.now();
        let outcome = batch::explain_one(scratch, &model, &query, &queries, index);
        let ticks = clock.now() - start;
        if outcome.is_err() {
            return Err(Failure::Explain { failed: 1, of: queries.len() as u32 });
        }
        report.calls += 1;
        report.ticks += ticks;
        report.max_ticks = report.max_ticks.max(ticks);
    }
    report.static_ram = measure::static_ram() as u32;
    report.stack = measure::stack_high_water() as u32;
    Ok(report)
}
