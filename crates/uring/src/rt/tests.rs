use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::exec::Executor;

fn on_loop<F: Future>(f: F) -> F::Output {
    let mut ex = Executor::new(64).expect("an io_uring (the tests need one)");
    ex.block_on(f).expect("the loop ran")
}

/// Sets its flag when dropped (a task's future let go of).
struct Dropped(Arc<AtomicBool>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

#[test]
fn a_task_spawned_on_a_loop_runs_there_and_hands_back_its_output() {
    on_loop(async {
        assert!(matches!(Handle::try_current(), Some(Handle::Ring(_))));
        let here = std::thread::current().id();
        let h = spawn(async move { (std::thread::current().id(), 7) });
        let (there, n) = h.await.expect("the task finished");
        assert_eq!((there, n), (here, 7), "on the loop's thread");
    });
}

#[test]
fn an_aborted_task_is_dropped_and_says_so() {
    on_loop(async {
        let dropped = Arc::new(AtomicBool::new(false));
        let guard = Dropped(dropped.clone());
        let h = spawn(async move {
            let _guard = guard;
            std::future::pending::<()>().await;
        });
        sleep(Duration::from_millis(5)).await;
        assert!(!dropped.load(Ordering::Acquire), "still running");
        h.abort();
        let r = h.await;
        assert!(r.is_err_and(|e| e.is_cancelled()), "aborted");
        assert!(dropped.load(Ordering::Acquire), "its future was dropped");
    });
}

#[test]
fn blocking_work_leaves_the_loop_and_its_spawns_come_back() {
    on_loop(async {
        let here = std::thread::current().id();
        let h = spawn_blocking(move || {
            let away = std::thread::current().id();
            // Spawned from the blocking thread: onto the loop it came from.
            let back = spawn(async { std::thread::current().id() });
            (away, back)
        });
        let (away, back) = h.await.expect("the blocking work finished");
        assert_ne!(away, here, "off the loop's thread");
        assert_eq!(back.await.expect("the task finished"), here);
    });
}

#[test]
fn timeouts_on_a_loop_end_at_their_deadline() {
    on_loop(async {
        let start = Instant::now();
        let r = timeout(Duration::from_millis(20), std::future::pending::<()>()).await;
        assert_eq!(r, Err(Elapsed));
        assert!(start.elapsed() >= Duration::from_millis(20));
        assert!(sleep(Duration::from_millis(1)).on_ring());
        let r = timeout_at(start + Duration::from_secs(5), async { 3 }).await;
        assert_eq!(r, Ok(3), "a ready future wins");
    });
}

#[tokio::test]
async fn in_tokio_the_same_calls_use_tokio() {
    assert!(matches!(Handle::try_current(), Some(Handle::Tokio(_))));
    assert!(!sleep(Duration::from_millis(1)).on_ring());
    let r = timeout(Duration::from_millis(5), std::future::pending::<()>()).await;
    assert_eq!(r, Err(Elapsed));
    let h = spawn(std::future::pending::<()>());
    h.abort();
    assert!(h.await.is_err_and(|e| e.is_cancelled()));
    assert_eq!(spawn_blocking(|| 5).await.expect("ran"), 5);
}

#[test]
fn a_join_set_hands_out_outputs_as_tasks_end_and_aborts_the_rest_when_dropped() {
    on_loop(async {
        let mut set = JoinSet::new();
        for ms in [30u64, 1, 10] {
            set.spawn(async move {
                sleep(Duration::from_millis(ms)).await;
                ms
            });
        }
        assert_eq!(set.len(), 3);
        let mut order = Vec::new();
        while let Some(r) = set.join_next().await {
            order.push(r.expect("no task failed"));
        }
        assert_eq!(order, [1, 10, 30], "in the order they ended");
        assert!(set.is_empty() && set.join_next().await.is_none());

        let dropped = Arc::new(AtomicBool::new(false));
        let guard = Dropped(dropped.clone());
        let mut set = JoinSet::new();
        set.spawn(async move {
            let _guard = guard;
            std::future::pending::<()>().await;
        });
        sleep(Duration::from_millis(2)).await;
        drop(set);
        sleep(Duration::from_millis(2)).await;
        assert!(
            dropped.load(Ordering::Acquire),
            "the running task was aborted"
        );
    });
}
