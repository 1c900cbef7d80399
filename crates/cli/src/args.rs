//! Values of the command line that more than one command reads.

/// The value of the option just read by `parser`, as UTF-8 text.
pub fn option_value(parser: &mut lexopt::Parser) -> Result<String, String> {
    parser
        .value()
        .map_err(|e| e.to_string())?
        .into_string()
        .map_err(|_| "option value is not UTF-8".to_string())
}

/// `--transport tcp|uring`: whether bytes move through io_uring.
pub fn parse_transport(v: &str) -> Result<bool, String> {
    match v {
        "tcp" | "epoll" => Ok(false),
        "uring" | "io_uring" => Ok(true),
        other => Err(format!("--transport {other}: want tcp or uring")),
    }
}
