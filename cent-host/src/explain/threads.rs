//! A query on two threads: the helper threads kept for queries ([`helpers`]), the hand-off of
//! one step to one of them ([`two_threads`]), and a query's steps as they run there
//! ([`Explainer::search_on_two_threads`]).

use super::{Ahead, ExplainError, Explainer, Explanation, Need, Start};
use crate::nearby::Around;
use crate::surrogate::Surrogate;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// The threads that help queries explained outside a rayon pool ([`Helper::Pool`]): one fewer
/// than the machine's cores (the calling thread is the other), started with the first such
/// query and kept, asleep between queries, so that a query does not start a thread of its own
/// (which cost it 5–6 %, measured in turn in one process). Their own pool, not rayon's global one, so that work a program
/// queues there never delays a query. Queries from more threads at once than there are
/// helpers share them: a query whose step no helper has begun runs it itself and, at its end,
/// waits until a helper has taken the step off the queue (and found it done). `None` when the threads could not be started, and in a
/// process forked from the one that started them (a Python `multiprocessing` worker), which
/// has none of their threads: its queries run on one thread.
pub(super) fn helpers() -> Option<&'static rayon::ThreadPool> {
    static HELPERS: OnceLock<(u32, Option<rayon::ThreadPool>)> = OnceLock::new();
    let (started_by, pool) = HELPERS.get_or_init(|| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(cores().saturating_sub(1).max(1))
            .thread_name(|i| format!("cent-helper-{i}"))
            .build()
            .ok();
        (std::process::id(), pool)
    });
    pool.as_ref().filter(|_| *started_by == std::process::id())
}

/// The machine's cores (1 when it cannot tell).
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// What a helper thread's step gave: its value, or the payload of its panic.
type Caught<V> = Result<V, Box<dyn std::any::Any + Send>>;

/// `rest(a(), b(), later)` with `a` on a thread of `helpers` while this thread runs `b`: the
/// helper sends this thread a handle on its result (`share`) and goes on with `then` on its
/// own, whose result `later` waits for (`None` when the helper did not run it). This thread
/// runs `a` itself when no helper has started it by the time `b` is done (all of them busy or
/// asleep). `later(false)` first tells `then`, through its flag, that it may stop early (as
/// `rest` returning does): what it returns then may be partial, which is for `rest` to set
/// aside. A panic on the helper is raised again here, as without the thread.
pub(super) fn two_threads<A: Send, B, T: Send, R>(
    helpers: &rayon::ThreadPool,
    a: impl FnOnce() -> A + Send,
    share: impl FnOnce(&A) -> A + Send,
    then: impl FnOnce(A, &AtomicBool) -> T + Send,
    b: impl FnOnce() -> B,
    rest: impl FnOnce(A, B, &mut dyn FnMut(bool) -> Option<T>) -> R,
) -> R {
    use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
    // `a` and `share`, until the helper or this thread takes them.
    let open = std::sync::Mutex::new(Some((a, share)));
    let take = || open.lock().ok().and_then(|mut open| open.take());
    let done = AtomicBool::new(false);
    let (send_a, receive_a) = std::sync::mpsc::sync_channel::<Caught<A>>(1);
    let (send_then, receive_then) = std::sync::mpsc::sync_channel::<Caught<T>>(1);
    // The scope returns once the helper's job has run, whether or not it took `a`.
    helpers.in_place_scope(|scope| {
        let (take, done) = (&take, &done);
        scope.spawn(move |_| {
            let Some((a, share)) = take() else { return };
            match catch_unwind(AssertUnwindSafe(|| {
                let mine = a();
                let shared = share(&mine);
                (mine, shared)
            })) {
                Ok((mine, shared)) => {
                    if send_a.send(Ok(shared)).is_ok() {
                        let _ = send_then.send(catch_unwind(AssertUnwindSafe(|| then(mine, done))));
                    }
                }
                Err(panic) => {
                    let _ = send_a.send(Err(panic));
                }
            }
        });
        let out_b = b();
        let (out_a, mut waiting) = match take() {
            Some((a, _)) => (a(), false),
            None => match receive_a.recv() {
                Ok(Ok(out_a)) => (out_a, true),
                Ok(Err(panic)) => resume_unwind(panic),
                Err(_) => unreachable!("a helper that took `a` sends its result or its panic"),
            },
        };
        let mut later = |wanted: bool| {
            if !wanted {
                done.store(true, Ordering::Relaxed);
            }
            if !std::mem::take(&mut waiting) {
                return None;
            }
            match receive_then.recv() {
                Ok(Ok(then)) => Some(then),
                Ok(Err(panic)) => resume_unwind(panic),
                Err(_) => unreachable!("a helper that sent `a` sends what `then` gave or its panic"),
            }
        };
        let out = rest(out_a, out_b, &mut later);
        later(false);
        out
    })
}

/// Where a query's second thread comes from ([`Config::parallel`]).
///
/// [`Config::parallel`]: super::Config::parallel
pub(super) enum Helper {
    /// One thread: the setting, or a machine with one core.
    None,
    /// A rayon worker (as `cent batch` runs queries): `rayon::join` offers the people around
    /// the query to the pool, which costs nothing when every worker is busy.
    Rayon,
    /// A thread of the kept helpers ([`helpers`], [`Explainer::search_on_two_threads`]).
    Pool(&'static rayon::ThreadPool),
}

impl Helper {
    pub(super) fn for_query(parallel: bool) -> Self {
        match (parallel && cores() >= 2, rayon::current_thread_index()) {
            (false, _) => Helper::None,
            (true, Some(_)) => Helper::Rayon,
            (true, None) => helpers().map_or(Helper::None, Helper::Pool),
        }
    }
}

impl Explainer<'_> {
    /// [`Explainer::explain`] with a thread of the kept helpers ([`helpers`]): it computes the people around
    /// `x` ([`Around::new`]) while this thread fits the first surrogate, hands this thread a
    /// handle on them, and goes on to judge people and single moves
    /// ([`Explainer::people_ahead`], [`Explainer::single_ahead`]), which this thread needs, if
    /// at all, only once its first answer is known, and to measure the first surrogate's
    /// fidelity, which this thread sends it once fitted. This
    /// thread computes the people itself when no helper has started by the time the
    /// surrogate is fitted (a busy machine, or the helpers busy with other queries), and the fidelity when
    /// the helper did not measure it; a panic on the helper is raised again here, as without
    /// the thread.
    pub(super) fn search_on_two_threads(
        &self,
        helpers: &rayon::ThreadPool,
        start: &Start<'_>,
    ) -> Result<Explanation, ExplainError> {
        let Start { x, query, targets, fact, .. } = *start;
        // The first surrogate and its held-out neighbours, from this thread to the helper.
        let (send, receive) = std::sync::mpsc::sync_channel::<(Surrogate, Vec<u32>)>(1);
        // The single moves go to whichever thread comes to them first: the helper after the
        // people, or this thread when it needs them before the helper has begun them.
        let single_taken = &AtomicBool::new(false);
        let take = |taken: &AtomicBool| !taken.swap(true, Ordering::AcqRel);
        two_threads(
            helpers,
            || Around::new(&self.nearby, x),
            Around::share,
            move |around, done| {
                let people = self.people_ahead(start, &around, done);
                // Nothing comes when the fit failed or held nothing out (the sender is gone).
                let measure = |(surrogate, held_out): (Surrogate, Vec<u32>)| {
                    self.held_out_fidelity(x, query, &surrogate, &held_out).ok()
                };
                // The fidelity now when the surrogate is fitted, else after the single moves.
                let mut fidelity = receive.try_recv().ok().and_then(measure);
                let single = (self.config.single_moves && !done.load(Ordering::Relaxed) && take(single_taken))
                    .then(|| self.single_ahead(start, &around, done))
                    .flatten();
                if fidelity.is_none() {
                    fidelity = receive.recv().ok().and_then(measure);
                }
                Ahead { people, single, fidelity }
            },
            move || {
                let first = self.fit_surrogate(x, query, fact, targets, self.config.k);
                if let Ok(fit) = &first
                    && !fit.held_out.is_empty()
                {
                    // Refused only when no helper is left to measure it: this thread will.
                    let _ = send.try_send((fit.surrogate.clone(), fit.held_out.clone()));
                }
                first
            },
            |around, first, later| {
                let never = AtomicBool::new(false);
                self.search(start, Some(&around), first, &mut |need| {
                    // Judged here, while the helper finishes the people.
                    let mine = (need == Need::Both && self.config.single_moves && take(single_taken))
                        .then(|| self.single_ahead(start, &around, &never));
                    // For the people alone, the helper is kept from the single moves when it has
                    // not begun them, and stopped in them when it has (its people are complete).
                    let in_single_moves = need == Need::People && !take(single_taken);
                    let wanted = need == Need::Both || (need == Need::People && !in_single_moves);
                    match (later(wanted), need) {
                        (Some(ahead), Need::Both) => Ahead { single: mine.unwrap_or(ahead.single), ..ahead },
                        (Some(ahead), Need::People) => Ahead { single: None, ..ahead },
                        // Told to stop early, the helper's people and single moves may be partial.
                        (Some(ahead), Need::Nothing) => Ahead { fidelity: ahead.fidelity, ..Ahead::default() },
                        (None, _) => Ahead { single: mine.flatten(), ..Ahead::default() },
                    }
                })
            },
        )
    }
}
