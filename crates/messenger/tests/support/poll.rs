//! Waiting on a condition in runtime tests.

use std::time::Duration;

/// Polls `done` every 10 ms for up to 10 s; returns whether it came true.
pub async fn until(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..1000 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    done()
}
