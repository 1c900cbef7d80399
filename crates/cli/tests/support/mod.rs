//! `msgr serve` for the CLI's tests.
#![allow(dead_code)] // each test file uses part of it

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

pub const MSGR: &str = env!("CARGO_BIN_EXE_msgr");

/// `msgr serve` on a free port; its address (`v2:127.0.0.1:PORT/NONCE`).
pub struct Server {
    child: Child,
    /// Its first address.
    pub addr: String,
    /// Its "listening on" line.
    pub line: String,
}

impl Server {
    pub fn start(extra: &[&str]) -> Server {
        Server::start_at("v2:127.0.0.1:0", extra)
    }

    pub fn start_at(bind: &str, extra: &[&str]) -> Server {
        Server::start_with(bind, extra, &[])
    }

    /// With `env` set for it.
    pub fn start_with(bind: &str, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let mut child = Command::new(MSGR)
            .args(["serve", "--bind", bind, "--nonce", "5"])
            .args(extra)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // "msgr serve: osd.0 listening on v2:127.0.0.1:PORT/5 (policy ...)",
        // or on [v2:...,v1:...]
        let addr = line
            .split(|c: char| c.is_whitespace() || c == '[' || c == ',' || c == ']')
            .find(|w| w.starts_with("v2:") || w.starts_with("v1:"))
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Server { child, addr, line }
    }

    /// Our address with another nonce: not the server's.
    pub fn wrong_nonce(&self) -> String {
        format!("{}/6", self.addr.rsplit_once('/').unwrap().0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
