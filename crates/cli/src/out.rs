//! The tool's standard output. When its reader goes away (`msgr ping |
//! head`), the tool ends quietly with status 0 instead of panicking in
//! `println!`. SIGPIPE's default would do the same, but it cannot be
//! restored: tokio writes sockets with writev, which raises SIGPIPE, and a
//! peer resetting a socket `msgr serve` writes to would kill the server.

use std::io::{self, Write};

/// Writes `args` to stdout and flushes it; a closed pipe ends the process
/// (status 0), any other write error too (status 1, said on stderr).
pub fn write(args: std::fmt::Arguments<'_>, newline: bool) {
    let mut out = io::stdout().lock();
    let written = out
        .write_fmt(args)
        .and_then(|()| match newline {
            true => out.write_all(b"\n"),
            false => Ok(()),
        })
        .and_then(|()| out.flush());
    if let Err(e) = written {
        end_on(&e);
    }
}

/// Ends the process for an error writing stdout: quietly when the reader
/// went away.
pub fn end_on(e: &io::Error) -> ! {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("msgr: writing to stdout: {e}");
    std::process::exit(1)
}

/// `println!` to stdout, ending quietly when the reader went away.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => { $crate::out::write(format_args!($($arg)*), true) };
}

/// `print!` to stdout, ending quietly when the reader went away.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::out::write(format_args!($($arg)*), false) };
}
