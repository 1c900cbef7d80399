//! The executor's tests: wakes, timers, tasks and their table.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use std::sync::atomic::AtomicUsize;
use std::sync::mpsc;

/// Runs `f` on a thread of its own and fails (rather than hangs) if it
/// has not finished in 20 s: a lost wakeup shows as that failure.
fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let t = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(out) => out,
        Err(mpsc::RecvTimeoutError::Disconnected) => match t.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("sent nothing and did not panic"),
        },
        Err(e) => panic!("the executor did not finish: a wakeup was lost ({e})"),
    }
}

#[test]
fn block_on_returns_its_futures_output() {
    let out = within(|| Executor::new(8).unwrap().block_on(async { 7 }).unwrap());
    assert_eq!(out, 7);
}

#[test]
fn spawned_tasks_run_from_the_loop_and_from_other_threads() {
    let n = within(|| {
        let mut ex = Executor::new(8).unwrap();
        let count = Arc::new(AtomicUsize::new(0));
        let spawner = ex.spawner();
        let (done_tx, done_rx) = tokio::sync::mpsc::unbounded_channel();
        for _ in 0..10 {
            let (c, d) = (count.clone(), done_tx.clone());
            spawner.spawn(async move {
                c.fetch_add(1, Ordering::Relaxed);
                let _ = d.send(());
            });
        }
        let remote = {
            let (spawner, c, d) = (spawner.clone(), count.clone(), done_tx.clone());
            std::thread::spawn(move || {
                for _ in 0..10 {
                    let (c, d) = (c.clone(), d.clone());
                    spawner.spawn(async move {
                        c.fetch_add(1, Ordering::Relaxed);
                        let _ = d.send(());
                    });
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
        };
        drop(done_tx);
        let mut done_rx = done_rx;
        ex.block_on(async move {
            for _ in 0..20 {
                done_rx.recv().await.unwrap();
            }
        })
        .unwrap();
        remote.join().unwrap();
        count.load(Ordering::Relaxed)
    });
    assert_eq!(n, 20);
}

/// Each round trip parks the loop and needs the other thread's wake to
/// reach it through the eventfd: a lost one hangs (and `within` fails).
#[test]
fn wakes_from_another_thread_reach_a_parked_loop() {
    let rounds = within(|| {
        let mut ex = Executor::new(8).unwrap();
        let (to_loop, mut from_thread) = tokio::sync::mpsc::channel::<u32>(1);
        let (to_thread, from_loop) = mpsc::channel::<u32>();
        let peer = std::thread::spawn(move || {
            for i in 0..2000 {
                to_loop.blocking_send(i).unwrap();
                assert_eq!(from_loop.recv().unwrap(), i);
            }
        });
        let n = ex
            .block_on(async move {
                let mut n = 0;
                while let Some(i) = from_thread.recv().await {
                    to_thread.send(i).unwrap();
                    n += 1;
                }
                n
            })
            .unwrap();
        peer.join().unwrap();
        n
    });
    assert_eq!(rounds, 2000);
}

#[test]
fn timers_fire_in_deadline_order_and_not_before() {
    let (order, waited) = within(|| {
        let mut ex = Executor::new(8).unwrap();
        let spawner = ex.spawner();
        let order = Arc::new(Mutex::new(Vec::new()));
        let start = Instant::now();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for ms in [30u64, 10, 20] {
            let (order, tx) = (order.clone(), tx.clone());
            spawner.spawn(async move {
                sleep_until(start + Duration::from_millis(ms)).await;
                lock(&order).push((ms, start.elapsed()));
                let _ = tx.send(());
            });
        }
        drop(tx);
        ex.block_on(async move { while rx.recv().await.is_some() {} })
            .unwrap();
        let order = lock(&order).clone();
        (order.iter().map(|(ms, _)| *ms).collect::<Vec<_>>(), order)
    });
    assert_eq!(order, [10, 20, 30]);
    for (ms, at) in waited {
        assert!(
            at >= Duration::from_millis(ms),
            "{ms} ms timer fired at {at:?}"
        );
    }
}

#[test]
fn a_reset_timer_fires_at_its_new_deadline_and_a_dropped_one_never() {
    let (fired_at, woken) = within(|| {
        let mut ex = Executor::new(8).unwrap();
        let start = Instant::now();
        ex.block_on(async move {
            // Set far away and polled (registered), then moved near.
            let mut t = Box::pin(sleep_until(start + Duration::from_secs(3600)));
            assert!(futures_poll_once(t.as_mut()).is_pending());
            t.as_mut().reset(start + Duration::from_millis(15));
            t.await;
            let fired_at = start.elapsed();
            // A dropped timer leaves nothing due: the loop's next
            // deadline is the live one's.
            let mut gone = Box::pin(sleep_until(Instant::now() + Duration::from_secs(60)));
            assert!(futures_poll_once(gone.as_mut()).is_pending());
            drop(gone);
            let woken =
                LOCAL.with(|l| l.borrow().as_ref().map(|l| l.timers.borrow().waiting.len()));
            (fired_at, woken)
        })
        .unwrap()
    });
    assert!(fired_at >= Duration::from_millis(15), "{fired_at:?}");
    assert!(fired_at < Duration::from_secs(3600));
    assert_eq!(woken, Some(0), "the dropped timer is forgotten");
}

/// Polls a future once with a waker that does nothing.
fn futures_poll_once<F: Future + ?Sized>(f: Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

struct DropFlag(Arc<AtomicBool>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn dropping_the_executor_drops_its_tasks_and_what_is_spawned_after() {
    let (waiting, queued, late) = within(|| {
        let mut ex = Executor::new(8).unwrap();
        let spawner = ex.spawner();
        let waiting = Arc::new(AtomicBool::new(false));
        let queued = Arc::new(AtomicBool::new(false));
        let late = Arc::new(AtomicBool::new(false));
        // A task that waits forever on a channel whose sender (and so
        // its waker) outlives the executor.
        let (keep_tx, mut keep_rx) = tokio::sync::mpsc::channel::<()>(1);
        let flag = DropFlag(waiting.clone());
        spawner.spawn(async move {
            let _flag = flag;
            let _ = keep_rx.recv().await;
        });
        ex.block_on(async {
            // Lets the task above run once and park on its channel.
            sleep_until(Instant::now() + Duration::from_millis(5)).await;
        })
        .unwrap();
        // Spawned, never run.
        let flag = DropFlag(queued.clone());
        spawner.spawn(async move {
            let _flag = flag;
        });
        drop(ex);
        // Read before the channel closes: closing it wakes the task,
        // whose wake would drop it too.
        let waiting = waiting.load(Ordering::SeqCst);
        let flag = DropFlag(late.clone());
        spawner.spawn(async move {
            let _flag = flag;
        });
        drop(keep_tx);
        (
            waiting,
            queued.load(Ordering::SeqCst),
            late.load(Ordering::SeqCst),
        )
    });
    assert!(waiting, "a parked task is dropped with its executor");
    assert!(queued, "a task spawned and never run is dropped");
    assert!(late, "a task spawned after is dropped at once");
}

/// A loop that runs many short tasks keeps only a bounded table of
/// them (finished ones are swept out as it grows).
#[test]
fn finished_tasks_are_swept_from_the_table() {
    let len = within(|| {
        let mut ex = Executor::new(8).unwrap();
        let spawner = ex.spawner();
        ex.block_on(async move {
            for _ in 0..10_000 {
                spawner.spawn(async {});
                // Lets the loop run it before the next.
                let mut yielded = false;
                std::future::poll_fn(|cx| {
                    if std::mem::replace(&mut yielded, true) {
                        return Poll::Ready(());
                    }
                    cx.waker().wake_by_ref();
                    Poll::Pending
                })
                .await;
            }
            LOCAL.with(|l| l.borrow().as_ref().map(|l| l.tasks.borrow().len()))
        })
        .unwrap()
    });
    assert!(len.is_some_and(|n| n <= 128), "{len:?} tasks held");
}

#[test]
fn a_sleep_off_any_loop_is_ready_at_once() {
    let mut t = Box::pin(sleep_until(Instant::now() + Duration::from_secs(3600)));
    assert!(futures_poll_once(t.as_mut()).is_ready());
}

/// A turn may post more than the submission queue holds (a ring shard's
/// queue is short, and a turn can answer more messages than it holds):
/// the queue is submitted as it fills and every operation completes. The
/// completion queue is the size asked.
#[test]
fn a_turn_posts_more_than_the_submission_queue_holds() {
    const POLLS: usize = 50;
    let ready_count = within(|| {
        let mut ex = Executor::with_completions(8, 256).unwrap();
        {
            let ring = ex.local.ring.borrow();
            assert_eq!(ring.params().sq_entries(), 8);
            assert_eq!(ring.params().cq_entries(), 256);
        }
        // Readable sockets: each poll completes as soon as it is submitted.
        let pairs: Vec<_> = (0..POLLS)
            .map(|_| std::os::unix::net::UnixStream::pair().unwrap())
            .collect();
        for (a, _) in &pairs {
            use std::io::Write;
            (&*a).write_all(b"x").unwrap();
        }
        ex.block_on(async {
            // All posted in one turn: one future polling every wait.
            let mut waits: Vec<_> = pairs
                .iter()
                .map(|(_, b)| Box::pin(ready(b, libc::POLLIN)))
                .collect();
            let mut ready_count = 0;
            std::future::poll_fn(|cx| {
                waits.retain_mut(|w| match w.as_mut().poll(cx) {
                    Poll::Ready(r) => {
                        assert!(r.unwrap() & libc::POLLIN as u32 != 0);
                        ready_count += 1;
                        false
                    }
                    Poll::Pending => true,
                });
                match waits.is_empty() {
                    true => Poll::Ready(()),
                    false => Poll::Pending,
                }
            })
            .await;
            ready_count
        })
        .unwrap()
    });
    assert_eq!(ready_count, POLLS);
}
