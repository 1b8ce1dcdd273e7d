//! The Summarize prompt template, with Python `str.format` rules for `{field}` and `{{ }}`.
//!
//! A [`Template`] is checked before anything is rendered: braces balanced, `{output}` exactly
//! once and `{tool_name}` at least once and at most [`MAX_TOOL_NAME_FIELDS`] times. A rendered
//! prompt is therefore never larger than the template, the output and a few tool names: a
//! template cannot amplify an output (60,000 `{output}` fields over a 1.5 MB output would be
//! 90 GB).

/// The reference's summary prompt. A custom one must contain `{tool_name}` (at most 16 times)
/// and `{output}` exactly once (see [`Template`]).
pub const DEFAULT_SUMMARY_PROMPT: &str = "The following output from the `{tool_name}` tool is too large to keep in full. Summarize it so the summary carries everything needed to keep working: concrete values, identifiers, errors, and structure. Respond ONLY with the summary, no preamble.\n\n<output>\n{output}\n</output>";

/// The most `{tool_name}` fields a template may hold.
pub const MAX_TOOL_NAME_FIELDS: usize = 16;

/// Why a summary prompt template cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PromptError {
    /// A `{` with no `}` after it.
    #[error("the summary prompt has an unmatched '{{'.")]
    UnmatchedOpen,
    /// A `}` that closes nothing (write `}}` for a literal one).
    #[error("the summary prompt has a single '}}'.")]
    SingleClose,
    /// No `{output}` field.
    #[error("the summary prompt must contain {{output}}.")]
    NoOutput,
    /// More than one `{output}` field: each would copy the whole output into the prompt.
    #[error("the summary prompt may contain {{output}} only once.")]
    RepeatedOutput,
    /// No `{tool_name}` field.
    #[error("the summary prompt must contain {{tool_name}}.")]
    NoToolName,
    /// More than [`MAX_TOOL_NAME_FIELDS`] `{tool_name}` fields.
    #[error("the summary prompt may contain {{tool_name}} at most {MAX_TOOL_NAME_FIELDS} times.")]
    TooManyToolNames,
}

/// A checked summary prompt template (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Template<'a> {
    text: &'a str,
    tool_names: usize,
}

impl<'a> Template<'a> {
    /// Check `text`: balanced braces, `{output}` exactly once, `{tool_name}` 1 to
    /// [`MAX_TOOL_NAME_FIELDS`] times. Other fields are allowed and rendered as written.
    pub fn parse(text: &'a str) -> Result<Self, PromptError> {
        let (mut outputs, mut tool_names, mut over_limit) = (0usize, 0usize, None);
        let walked = walk(text, |piece| {
            match piece {
                Piece::Field("output") => outputs += 1,
                Piece::Field("tool_name") => tool_names += 1,
                _ => return,
            }
            // The first field over its limit is the error, whatever follows it.
            if over_limit.is_none() && outputs > 1 {
                over_limit = Some(PromptError::RepeatedOutput);
            } else if over_limit.is_none() && tool_names > MAX_TOOL_NAME_FIELDS {
                over_limit = Some(PromptError::TooManyToolNames);
            }
        });
        if let Some(error) = over_limit {
            return Err(error);
        }
        walked?;
        match (outputs, tool_names) {
            (0, _) => Err(PromptError::NoOutput),
            (_, 0) => Err(PromptError::NoToolName),
            _ => Ok(Self { text, tool_names }),
        }
    }

    /// The reference's template, [`DEFAULT_SUMMARY_PROMPT`].
    pub fn reference() -> Template<'static> {
        Template {
            text: DEFAULT_SUMMARY_PROMPT,
            tool_names: 1,
        }
    }

    /// Fill `{tool_name}` and `{output}` in; other fields are left as written.
    pub fn render(&self, tool_name: &str, output: &str) -> String {
        let capacity = self.text.len() + output.len() + self.tool_names * tool_name.len();
        let mut out = String::with_capacity(capacity);
        // A checked template walks to its end.
        let _ = walk(self.text, |piece| match piece {
            Piece::Literal(s) => out.push_str(s),
            Piece::Field("tool_name") => out.push_str(tool_name),
            Piece::Field("output") => out.push_str(output),
            Piece::Field(other) => out.extend(["{", other, "}"]),
        });
        out
    }
}

enum Piece<'a> {
    Literal(&'a str),
    Field(&'a str),
}

/// Hand each piece of `template` to `each` in order; an unbalanced brace ends the walk.
fn walk<'a>(template: &'a str, mut each: impl FnMut(Piece<'a>)) -> Result<(), PromptError> {
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        each(Piece::Literal(&rest[..i]));
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            each(Piece::Literal(&tail[..1]));
            rest = &tail[2..];
        } else if tail.starts_with('{') {
            let close = tail.find('}').ok_or(PromptError::UnmatchedOpen)?;
            each(Piece::Field(&tail[1..close]));
            rest = &tail[close + 1..];
        } else {
            return Err(PromptError::SingleClose);
        }
    }
    each(Piece::Literal(rest));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_fields_and_escapes() {
        let template = Template::parse("{tool_name}/{tool_name} {{x}} {other} }} <{output}>")
            .expect("a valid template");
        assert_eq!(template.render("t", "o"), "t/t {x} {other} } <o>");
        let template = Template::parse("Summarize `{tool_name}` ({{raw}}):\n{output}");
        let rendered = template.map(|t| t.render("cat", "a\nb"));
        assert_eq!(rendered, Ok("Summarize `cat` ({raw}):\na\nb".to_owned()));
        let reference = Template::reference();
        assert_eq!(Template::parse(DEFAULT_SUMMARY_PROMPT), Ok(reference));
        assert!(
            reference
                .render("cat", "X")
                .ends_with("<output>\nX\n</output>")
        );
    }

    #[test]
    fn refuses_templates_that_could_amplify_the_output() {
        let repeated = format!("{{tool_name}}{}", "{output}".repeat(60_000));
        assert_eq!(Template::parse(&repeated), Err(PromptError::RepeatedOutput));
        assert_eq!(Template::parse("{tool_name}"), Err(PromptError::NoOutput));
        let names = "{tool_name}".repeat(MAX_TOOL_NAME_FIELDS + 1) + "{output}";
        assert_eq!(Template::parse(&names), Err(PromptError::TooManyToolNames));
        assert!(Template::parse(&names[11..]).is_ok());
        assert_eq!(Template::parse("{output}"), Err(PromptError::NoToolName));
    }

    #[test]
    fn the_first_field_over_its_limit_is_the_error() {
        let names = "{tool_name}".repeat(MAX_TOOL_NAME_FIELDS + 1);
        let twice = "{output}{output}";
        let (names_first, output_first) = (format!("{names}{twice}"), format!("{twice}{names}"));
        assert_eq!(
            Template::parse(&names_first),
            Err(PromptError::TooManyToolNames)
        );
        assert_eq!(
            Template::parse(&output_first),
            Err(PromptError::RepeatedOutput)
        );
        // `\u{7d}` is a closing brace, alone.
        let brace_after = Template::parse("{tool_name}{output}{output} \u{7d}");
        assert_eq!(brace_after, Err(PromptError::RepeatedOutput));
        let brace_before = Template::parse("{tool_name} \u{7d} {output}{output}");
        assert_eq!(brace_before, Err(PromptError::SingleClose));
    }

    #[test]
    fn refuses_unbalanced_braces() {
        assert_eq!(
            Template::parse("{tool_name} {output"),
            Err(PromptError::UnmatchedOpen)
        );
        assert_eq!(
            Template::parse("{tool_name} } {output}"),
            Err(PromptError::SingleClose)
        );
        assert_eq!(
            PromptError::SingleClose.to_string(),
            "the summary prompt has a single '}'."
        );
        assert_eq!(
            PromptError::TooManyToolNames.to_string(),
            "the summary prompt may contain {tool_name} at most 16 times."
        );
    }
}
