//! `msgr`: a native msgr2 toolbox.

use std::process::ExitCode;

use lexopt::prelude::*;

const USAGE: &str = "\
usage: msgr <command> [options]

commands:
  decode CAPTURE [--json] [--keys FILE]
      Print every msgr2 frame of a pcap/pcapng capture, per connection and
      direction. --json prints one JSON object per line. --keys names a file
      of connection secrets for secure-mode connections, one per line:
        CLIENT_IP:PORT SERVER_IP:PORT SECRET_HEX
        conn=N SECRET_HEX
      (# starts a comment). Exit status 0 when every stream decoded cleanly,
      1 when some stream had a problem (reported inline), 2 on usage errors.
";

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("msgr: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<ExitCode, Box<dyn std::error::Error>> {
    let mut parser = lexopt::Parser::from_env();
    let command = match parser.next()? {
        Some(Value(v)) => v.string()?,
        Some(Long("help") | Short('h')) | None => {
            print!("{USAGE}");
            return Ok(ExitCode::SUCCESS);
        }
        Some(other) => return Err(other.unexpected().into()),
    };
    match command.as_str() {
        "decode" => decode(parser),
        other => Err(format!("unknown command {other:?}\n\n{USAGE}").into()),
    }
}

fn decode(mut parser: lexopt::Parser) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let mut path = None;
    let mut json = false;
    let mut keys = msgr_cli::inspect::KeyLog::default();
    while let Some(arg) = parser.next()? {
        match arg {
            Long("json") => json = true,
            Long("keys") => {
                let file: String = parser.value()?.string()?;
                let text = std::fs::read_to_string(&file).map_err(|e| format!("{file}: {e}"))?;
                keys = msgr_cli::inspect::KeyLog::parse(&text)?;
            }
            Value(v) if path.is_none() => path = Some(v.string()?),
            Long("help") | Short('h') => {
                print!("{USAGE}");
                return Ok(ExitCode::SUCCESS);
            }
            other => return Err(other.unexpected().into()),
        }
    }
    let path = path.ok_or("decode needs a capture file")?;
    let capture = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let summary = msgr_cli::decode_cmd::decode(&capture, &keys, json, &mut out)?;
    Ok(if summary.problems == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
