//! Independent clients the suite runs as programs: Python from the project's `.venv/`
//! (installed by `scripts/test`) and Node with the packages under `tests/clients/`.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The workspace root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// `tests/clients/<name>`.
pub fn script(name: &str) -> PathBuf {
    root().join("tests/clients").join(name)
}

/// The `.venv` Python; `scripts/test` installs it with the client packages.
pub fn python() -> Command {
    let python = root().join(".venv/bin/python");
    assert!(python.exists(), "{} is missing: run scripts/test, which installs the client packages", python.display());
    Command::new(python)
}

/// Runs `command` with `stdin` and returns its output, asserting that it could start.
pub fn run(mut command: Command, stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("{command:?} could not start: {error}"));
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// Runs `command` (blocking, off the async threads) and asserts it exits 0, showing its output.
pub async fn run_ok(command: Command) -> String {
    let output = tokio::task::spawn_blocking(move || run(command, b"")).await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "client check failed ({}):\n{stdout}\n{stderr}", output.status);
    println!("{stdout}"); // shown by `cargo nextest run --no-capture`
    stdout
}

/// Verifies a raw message's DKIM signature with dkimpy, the reference verifier, given the
/// published `p=` key; `Err` carries dkimpy's reason.
pub fn dkimpy_verify(message: &[u8], public_key_b64: &str) -> Result<(), String> {
    let mut command = python();
    command.arg(script("dkim_verify.py")).arg(public_key_b64);
    let output = run(command, message);
    let said = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    if output.status.success() { Ok(()) } else { Err(said) }
}
