//! README.md's usage section is what `msgr --help` prints: the help is
//! generated from the command line's declaration (msgr_cli::args), and
//! this test keeps the README's copy from drifting from it.

use clap::CommandFactory;

const README: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
const BEGIN: &str = "<!-- msgr --help -->";
const END: &str = "<!-- end of msgr --help -->";

/// The README's block between the markers, its 4-space indent removed.
fn readme_block() -> String {
    let readme = std::fs::read_to_string(README).expect("README.md");
    let start = readme.find(BEGIN).expect("the README's usage block") + BEGIN.len();
    let len = readme[start..].find(END).expect("the usage block's end");
    readme[start..start + len]
        .trim_matches('\n')
        .lines()
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_readme_shows_what_msgr_help_prints() {
    let generated = msgr_cli::args::Cli::command().render_help().to_string();
    let printed = std::process::Command::new(env!("CARGO_BIN_EXE_msgr"))
        .arg("--help")
        .output()
        .expect("run msgr --help");
    assert!(printed.status.success());
    let printed = String::from_utf8(printed.stdout).expect("UTF-8 help");
    assert_eq!(printed.trim_end(), generated.trim_end(), "msgr --help");
    assert_eq!(
        readme_block(),
        generated.trim_end(),
        "README.md's usage block differs from msgr --help: paste the new help between {BEGIN} and {END}"
    );
}

#[test]
fn every_command_has_help() {
    for name in [
        "bench", "serve", "ping", "mon", "osd", "rados", "crush", "decode",
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_msgr"))
            .args([name, "--help"])
            .output()
            .expect("run msgr COMMAND --help");
        assert!(out.status.success(), "msgr {name} --help");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("Usage: msgr {name}")), "{text}");
    }
}
