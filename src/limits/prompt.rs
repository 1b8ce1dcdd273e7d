//! The Summarize prompt template, with Python `str.format` rules for `{field}` and `{{ }}`.

/// The field names a template uses; an error for an unbalanced brace.
pub fn fields(template: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    walk(template, |piece| {
        if let Piece::Field(name) = piece {
            out.push(name.to_owned());
        }
    })?;
    Ok(out)
}

/// Fill `{tool_name}` and `{output}` in; other fields are left as written.
pub fn render(template: &str, tool_name: &str, output: &str) -> String {
    let mut out = String::with_capacity(template.len() + output.len());
    let filled = walk(template, |piece| match piece {
        Piece::Literal(s) => out.push_str(s),
        Piece::Field("tool_name") => out.push_str(tool_name),
        Piece::Field("output") => out.push_str(output),
        Piece::Field(other) => {
            out.push('{');
            out.push_str(other);
            out.push('}');
        }
    });
    match filled {
        Ok(()) => out,
        Err(_) => template
            .replace("{tool_name}", tool_name)
            .replace("{output}", output),
    }
}

enum Piece<'a> {
    Literal(&'a str),
    Field(&'a str),
}

fn walk<'a>(template: &'a str, mut each: impl FnMut(Piece<'a>)) -> Result<(), String> {
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        each(Piece::Literal(&rest[..i]));
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            each(Piece::Literal(&tail[..1]));
            rest = &tail[2..];
        } else if tail.starts_with('{') {
            let close = tail
                .find('}')
                .ok_or("the summary prompt has an unmatched '{'.")?;
            each(Piece::Field(&tail[1..close]));
            rest = &tail[close + 1..];
        } else {
            return Err("the summary prompt has a single '}'.".into());
        }
    }
    each(Piece::Literal(rest));
    Ok(())
}
