//! How both studies run their units of work: a bounded number at once, none started
//! after a stop.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::RunError;
use crate::control::StopSignal;

/// Run `job(i)` for every `i` in `0..n`, at most `concurrency` at a time, in order of
/// `i`. Once `stop` is set no further job starts; the jobs already started run to their
/// end (they see the stop themselves and leave their episodes incomplete). Every started
/// job is awaited before the first error, if any, is returned, so nothing is still
/// writing to the store when the caller moves on.
pub(crate) async fn for_each_bounded<F, Fut>(
    n: usize,
    concurrency: usize,
    stop: &StopSignal,
    job: F,
) -> Result<(), RunError>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<(), RunError>> + Send + 'static,
{
    let limit = Arc::new(Semaphore::new(concurrency.max(1)));
    let mut handles = Vec::with_capacity(n.min(4096));
    for i in 0..n {
        let permit = limit
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        if stop.is_stopped() {
            break;
        }
        let work = job(i);
        handles.push(tokio::spawn(async move {
            let _permit = permit;
            work.await
        }));
    }
    let mut first = Ok(());
    for h in handles {
        let result = match h.await {
            Ok(r) => r,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => Err(RunError::Internal(format!(
                "a scheduled job was cancelled: {e}"
            ))),
        };
        if first.is_ok() {
            first = result;
        }
    }
    first
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn at_most_the_limit_run_at_once_and_a_stop_starts_no_more() {
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        let stop = StopSignal::default();
        let (r, p, d, s) = (running.clone(), peak.clone(), done.clone(), stop.clone());
        let result = for_each_bounded(20, 3, &stop, move |i| {
            let (r, p, d, s) = (r.clone(), p.clone(), d.clone(), s.clone());
            async move {
                let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                p.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                r.fetch_sub(1, Ordering::SeqCst);
                d.fetch_add(1, Ordering::SeqCst);
                if i == 8 {
                    s.stop();
                    return Err(RunError::Internal("job 8 failed".into()));
                }
                Ok(())
            }
        })
        .await;
        assert_eq!(peak.load(Ordering::SeqCst), 3);
        let finished = done.load(Ordering::SeqCst);
        assert!((9..=11).contains(&finished), "{finished} jobs ran");
        assert!(matches!(result, Err(RunError::Internal(m)) if m == "job 8 failed"));
    }
}
