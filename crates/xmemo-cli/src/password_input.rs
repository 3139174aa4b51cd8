//! Reading a password for `xmemo admin account set-password`: from standard input when it
//! is piped (scripts: `printf '%s\n' "$PASSWORD" | xmemo admin account set-password bob`),
//! else from the terminal, twice, without echo. Never from the command line, where every
//! user of the machine could read it in the process list.

use anyhow::{Context, bail};
use std::io::{BufRead, IsTerminal};

pub fn read(prompt: String) -> anyhow::Result<String> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        let mut line = String::new();
        stdin
            .lock()
            .read_line(&mut line)
            .context("cannot read the password from standard input")?;
        let password = line.trim_end_matches(['\n', '\r']).to_string();
        if password.is_empty() {
            bail!("no password on standard input");
        }
        return Ok(password);
    }
    let first = rpassword::prompt_password(format!("{prompt}: "))
        .context("cannot read the password from the terminal")?;
    let again = rpassword::prompt_password("again: ")
        .context("cannot read the password from the terminal")?;
    if first != again {
        bail!("the two passwords differ; nothing was changed");
    }
    Ok(first)
}
