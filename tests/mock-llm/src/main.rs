//! `mock-llm --script FILE [--port N] [--log FILE] [--context-window N]`: serves a script on
//! `127.0.0.1` until killed. The first stdout line is exactly
//! `listening on http://127.0.0.1:PORT` (flushed), so a caller can read the
//! port when it passed `--port 0`. Exit codes: 2 for bad arguments, 1 when
//! the script cannot be loaded or the port cannot be bound.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: mock-llm --script FILE [--port N] [--log FILE] [--context-window N]\n\
  --script FILE  JSON script of responses (see tests/mock-llm/README.md)\n\
  --port N       port on 127.0.0.1 (default 0: a free port)\n\
  --log FILE     append every request body to FILE as one JSON line\n\
  --context-window N  refuse requests over N tokens (bytes / 4), as the API does";

struct Args {
    script: PathBuf,
    port: u16,
    log: Option<PathBuf>,
    context_window: Option<u64>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut script, mut port, mut log, mut context_window) = (None, 0u16, None, None);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--script" => script = Some(PathBuf::from(value("--script")?)),
            "--log" => log = Some(PathBuf::from(value("--log")?)),
            "--port" => {
                let text = value("--port")?;
                port = text
                    .parse()
                    .map_err(|_| format!("--port must be a number 0..=65535, got {text:?}"))?;
            }
            "--context-window" => {
                let text = value("--context-window")?;
                context_window = Some(text.parse().map_err(|_| {
                    format!("--context-window must be a number of tokens, got {text:?}")
                })?);
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let script = script.ok_or("--script FILE is required")?;
    Ok(Args {
        script,
        port,
        log,
        context_window,
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("mock-llm: {message}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut script = match mock_llm::Script::from_file(&args.script) {
        Ok(script) => script,
        Err(e) => {
            eprintln!("mock-llm: {e}");
            return ExitCode::from(1);
        }
    };
    if args.context_window.is_some() {
        script.context_window = args.context_window;
    }
    let entries = script.responses.len();
    let server = match mock_llm::spawn_on_port(script, args.log.as_deref(), args.port).await {
        Ok(server) => server,
        Err(e) => {
            eprintln!("mock-llm: cannot start on port {}: {e}", args.port);
            return ExitCode::from(1);
        }
    };
    let mut stdout = std::io::stdout();
    if writeln!(stdout, "listening on {}", server.url())
        .and_then(|_| stdout.flush())
        .is_err()
    {
        return ExitCode::from(1);
    }
    eprintln!("mock-llm: serving {entries} scripted responses");
    // Runs until Ctrl-C; SIGTERM/SIGKILL end the process directly.
    if let Err(e) = tokio::signal::ctrl_c().await {
        eprintln!("mock-llm: cannot wait for Ctrl-C ({e}); serving until killed");
        std::future::pending::<()>().await;
    }
    drop(server);
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, String> {
        parse_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn parses_all_flags() {
        let args = parse(&[
            "--script",
            "s.json",
            "--port",
            "8080",
            "--log",
            "l.jsonl",
            "--context-window",
            "200000",
        ])
        .unwrap();
        assert_eq!(args.context_window, Some(200_000));
        assert_eq!(args.script, PathBuf::from("s.json"));
        assert_eq!(args.port, 8080);
        assert_eq!(args.log, Some(PathBuf::from("l.jsonl")));
    }

    #[test]
    fn rejects_bad_arguments() {
        assert_eq!(parse(&[]).err().unwrap(), "--script FILE is required");
        assert_eq!(parse(&["--port"]).err().unwrap(), "--port needs a value");
        assert!(parse(&["--script", "s", "--port", "x"])
            .err()
            .unwrap()
            .contains("0..=65535"));
        assert!(parse(&["--bogus"]).err().unwrap().contains("--bogus"));
    }
}
