//! How a command answers: under `--json` the JSON a script reads, else text for a person.
//! Every command decides between the two here, so `--json` means the same everywhere.

use serde_json::Value;
use std::fmt::Display;

/// `value` as indented JSON on stdout.
pub fn print_json(value: &Value) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => println!("{text}"),
        Err(_) => println!("{value}"),
    }
}

/// Under `json`, `value` as JSON; else `text` prints it for a person. `text` gets the value
/// itself, as reading it into typed rows may fail (an unexpected answer is an error).
pub fn print_result(
    json: bool,
    value: Value,
    text: impl FnOnce(Value) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    if json {
        print_json(&value);
        Ok(())
    } else {
        text(value)
    }
}

/// Under `json`, `value` as JSON; else the line `text`.
pub fn print_result_line(json: bool, value: &Value, text: impl Display) {
    if json {
        print_json(value);
    } else {
        println!("{text}");
    }
}

/// As [`print_result_line`], with the JSON on one line: what `admin migrate` and `admin copy`
/// have always printed, kept so scripts reading them line by line go on working.
pub fn print_result_one_line(json: bool, value: &Value, text: impl Display) {
    if json {
        println!("{value}");
    } else {
        println!("{text}");
    }
}
