//! Choosing the interpreter of an entry file (pure).

use serde::Serialize;

/// Interpreter that runs an entry file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Runtime {
    /// `python3 <entry>`
    Python3,
    /// `bash <entry>`
    Bash,
    /// `#!<interpreter> [argument]` line: `<interpreter> [argument] <entry>`.
    Shebang {
        /// First word after `#!`.
        interpreter: String,
        /// Rest of the line (Linux passes it as one argument), if any.
        argument: Option<String>,
    },
}

/// Longest shebang line considered (Linux reads 256 bytes).
const SHEBANG_MAX: usize = 256;

/// Picks the runtime: extension first (`.py` → python3, `.sh`/`.bash` → bash), else the
/// shebang line of `first_bytes`, else python3.
pub fn runtime_for(entry: &str, first_bytes: &[u8]) -> Runtime {
    let file_name = entry.rsplit('/').next().unwrap_or(entry);
    if let Some((stem, extension)) = file_name.rsplit_once('.')
        && !stem.is_empty()
    {
        match extension.to_ascii_lowercase().as_str() {
            "py" => return Runtime::Python3,
            "sh" | "bash" => return Runtime::Bash,
            _ => {}
        }
    }
    parse_shebang(first_bytes).unwrap_or(Runtime::Python3)
}

fn parse_shebang(bytes: &[u8]) -> Option<Runtime> {
    let rest = bytes.strip_prefix(b"#!")?;
    let rest = &rest[..rest.len().min(SHEBANG_MAX - 2)];
    let line_end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
    let line = std::str::from_utf8(&rest[..line_end]).ok()?;
    let line = line.trim_end_matches('\r').trim_matches([' ', '\t']);
    if line.is_empty() || line.contains('\0') {
        return None;
    }
    let (interpreter, argument) = match line.find([' ', '\t']) {
        Some(split) => {
            let argument = line[split..].trim_matches([' ', '\t']);
            (
                &line[..split],
                (!argument.is_empty()).then(|| argument.to_owned()),
            )
        }
        None => (line, None),
    };
    Some(Runtime::Shebang {
        interpreter: interpreter.to_owned(),
        argument,
    })
}

impl Runtime {
    /// The argv that runs `script` (a path as seen by the process) with this runtime.
    pub fn argv(&self, script: &str) -> Vec<String> {
        match self {
            Runtime::Python3 => vec!["python3".to_owned(), script.to_owned()],
            Runtime::Bash => vec!["bash".to_owned(), script.to_owned()],
            Runtime::Shebang {
                interpreter,
                argument,
            } => {
                let mut argv = vec![interpreter.clone()];
                argv.extend(argument.iter().cloned());
                argv.push(script.to_owned());
                argv
            }
        }
    }

    /// Short label for logs and results (`python3`, `bash`, `#!/usr/bin/env python3`).
    pub fn label(&self) -> String {
        match self {
            Runtime::Python3 => "python3".to_owned(),
            Runtime::Bash => "bash".to_owned(),
            Runtime::Shebang {
                interpreter,
                argument: Some(argument),
            } => format!("#!{interpreter} {argument}"),
            Runtime::Shebang {
                interpreter,
                argument: None,
            } => format!("#!{interpreter}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shebang(interpreter: &str, argument: Option<&str>) -> Runtime {
        Runtime::Shebang {
            interpreter: interpreter.to_owned(),
            argument: argument.map(str::to_owned),
        }
    }

    #[test]
    fn extension_wins() {
        assert_eq!(runtime_for("main.py", b"#!/bin/sh\n"), Runtime::Python3);
        assert_eq!(runtime_for("a/b/RUN.PY", b""), Runtime::Python3);
        assert_eq!(
            runtime_for("run.sh", b"#!/usr/bin/python3\n"),
            Runtime::Bash
        );
        assert_eq!(runtime_for("run.bash", b""), Runtime::Bash);
    }

    #[test]
    fn shebang_when_no_known_extension() {
        assert_eq!(
            runtime_for("tool", b"#!/usr/bin/env python3\nprint(1)\n"),
            shebang("/usr/bin/env", Some("python3"))
        );
        assert_eq!(
            runtime_for("tool.txt", b"#!/bin/sh\n"),
            shebang("/bin/sh", None)
        );
        assert_eq!(
            runtime_for("x", b"#!  /bin/bash   -e -u \r\nexit"),
            shebang("/bin/bash", Some("-e -u"))
        );
        // A dot file is not an extension.
        assert_eq!(runtime_for(".py", b"#!/bin/sh\n"), shebang("/bin/sh", None));
    }

    #[test]
    fn default_is_python3() {
        assert_eq!(runtime_for("script", b"print('hi')\n"), Runtime::Python3);
        assert_eq!(runtime_for("script.rb", b""), Runtime::Python3);
        assert_eq!(runtime_for("x", b"#!\n"), Runtime::Python3);
        assert_eq!(runtime_for("x", b"#! \xff\xfe\n"), Runtime::Python3);
        assert_eq!(runtime_for("x", b""), Runtime::Python3);
    }

    #[test]
    fn argv_and_labels() {
        assert_eq!(
            Runtime::Python3.argv("/skill/main.py"),
            vec!["python3", "/skill/main.py"]
        );
        assert_eq!(
            Runtime::Bash.argv("/skill/a.sh"),
            vec!["bash", "/skill/a.sh"]
        );
        assert_eq!(
            shebang("/usr/bin/env", Some("python3")).argv("/skill/t"),
            vec!["/usr/bin/env", "python3", "/skill/t"]
        );
        assert_eq!(shebang("/bin/sh", None).label(), "#!/bin/sh");
    }
}
