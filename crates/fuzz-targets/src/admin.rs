//! The admin socket's requests: whatever a local client sends is answered
//! or refused, never a panic, and a JSON answer is JSON.

use std::sync::Arc;

use msgr_admin::commands::{Commands, Version};
use msgr_admin::json::{parse, Value};
use msgr_admin::perf::Collection;

pub fn admin(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let commands = Commands::new(Collection::new(), Version::default());
    commands.set_config("ms_bind_msgr2", "true");
    commands.add_messenger(
        "client",
        Arc::new(|contents: &[String], tcp_info: bool| {
            Value::Array(vec![contents.to_vec().into(), tcp_info.into()])
        }),
    );
    let body = msgr_admin::socket::answer(text, &commands);
    if body.starts_with("ERROR: (") || body == "2" {
        return;
    }
    parse(&body).unwrap_or_else(|e| panic!("answer {body:?} is not JSON: {e}"));
}
