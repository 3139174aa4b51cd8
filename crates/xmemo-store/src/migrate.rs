//! A small, dialect-neutral migration runner: each backend embeds its ordered SQL files and
//! records applied versions in `schema_migrations`.

/// One embedded migration.
pub struct Migration {
    pub version: i64,
    pub name: &'static str,
    pub sql: &'static str,
}

/// Splits a migration file into statements. Statements end with `;` at the end of a line;
/// trigger bodies (`BEGIN … END;`) are kept whole.
pub fn statements(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for line in sql.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("--") || trimmed.is_empty() {
            continue;
        }
        let upper = trimmed.to_ascii_uppercase();
        if upper.ends_with("BEGIN") || upper.contains(" BEGIN ") {
            depth += 1;
        }
        current.push_str(line);
        current.push('\n');
        if trimmed.ends_with(';') {
            if depth > 0 && upper.starts_with("END") {
                depth -= 1;
            }
            if depth == 0 {
                out.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.trim().is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn splits_statements_and_keeps_trigger_bodies() {
        let sql = "-- c\nCREATE TABLE a (x INT);\nCREATE TRIGGER t AFTER INSERT ON a BEGIN\n  SELECT 1;\nEND;\nCREATE INDEX i ON a(x);\n";
        let s = super::statements(sql);
        assert_eq!(s.len(), 3);
        assert!(s[1].contains("SELECT 1;") && s[1].contains("END;"));
    }
}
