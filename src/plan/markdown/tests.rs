//! The line-numbered view of markdown: blocks, lines, inline content and sections.

use super::*;

fn text(s: &str) -> Span {
    Span::Text(s.to_owned())
}

#[test]
fn headings_and_paragraph_lines_carry_line_numbers() {
    let doc = Document::parse("# Title\n\n**Status:** Pending\n**Depends On:** N/A\n\n## Gates\n");
    assert_eq!(doc.title(), Some(("Title".to_owned(), 1)));
    let Block::Paragraph(lines) = &doc.blocks[1] else {
        panic!("not a paragraph: {:?}", doc.blocks[1]);
    };
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0].line, 3);
    assert_eq!(lines[0].content.plain(), "Status: Pending");
    assert_eq!(lines[1].line, 4);
    assert_eq!(
        lines[1]
            .content
            .after_label("depends on")
            .map(|i| i.plain()),
        Some(" N/A".to_owned())
    );
    assert_eq!(doc.blocks[2].heading_level(), Some(2));
}

#[test]
fn list_items_keep_depth_checkbox_code_and_links() {
    let doc = Document::parse(
        "- [ ] Write notes to: `notes/a.md`\n  - nested [link](x.md)\n- [x] **AGENT:doc** - sync\n",
    );
    let items: Vec<_> = doc
        .blocks
        .iter()
        .map(|b| match b {
            Block::Item {
                depth,
                checked,
                content,
                line,
                ..
            } => (*depth, *checked, content.clone(), *line),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(items.len(), 3);
    assert_eq!(
        items[0],
        (
            0,
            Some(false),
            Inlines(vec![
                text("Write notes to: "),
                Span::Code("notes/a.md".into())
            ]),
            1
        )
    );
    assert_eq!(items[1].0, 1);
    assert_eq!(
        items[1].2,
        Inlines(vec![
            text("nested "),
            Span::Link {
                dest: "x.md".into(),
                text: "link".into()
            }
        ])
    );
    assert_eq!(items[2].1, Some(true));
    assert_eq!(items[2].2.plain(), "AGENT:doc - sync");
    assert_eq!(items[2].3, 3);
}

#[test]
fn code_blocks_are_dropped_even_inside_items() {
    let doc = Document::parse(
        "- [ ] Pre-validation:\n  ```bash\n  # not a heading\n  cargo test\n  ```\n- [ ] Next\n\n```\n# nope\n```\n",
    );
    assert!(
        doc.blocks.iter().all(|b| b.heading_level().is_none()),
        "{doc:?}"
    );
    let texts: Vec<String> = doc
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Item { content, .. } => Some(content.plain()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["Pre-validation:", "Next"]);
    let Block::Item { code, .. } = &doc.blocks[0] else {
        panic!("{doc:?}");
    };
    assert_eq!(code, &["# not a heading\ncargo test".to_owned()]);
    let Block::Item { code, .. } = &doc.blocks[1] else {
        panic!("{doc:?}");
    };
    assert!(code.is_empty(), "a top-level code block belongs to no item");
}

#[test]
fn tables_have_header_rows_and_lines() {
    let doc = Document::parse(
        "intro\n\n| Phase | Title | Status |\n|---|---|---|\n| 1 | [One](p1.md) | Pending |\n| 2 | `two` | Done |\n",
    );
    let Block::Table { header, rows, line } = &doc.blocks[1] else {
        panic!("no table: {doc:?}");
    };
    assert_eq!(*line, 3);
    let header: Vec<String> = header.iter().map(Inlines::plain).collect();
    assert_eq!(header, ["Phase", "Title", "Status"]);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].line, 5);
    assert_eq!(rows[1].line, 6);
    assert_eq!(
        rows[0].cells[1].links().collect::<Vec<_>>(),
        [("p1.md", "One")]
    );
    assert_eq!(rows[1].cells[1].code_spans().collect::<Vec<_>>(), ["two"]);
}

#[test]
fn sections_end_at_a_heading_of_the_same_level() {
    let doc = Document::parse(
        "## Gates\n- a: b\n### Sub\n- c: d\n## Tasks\n- [ ] 1.1: x\n## Gates (again)\n- e: f\n",
    );
    let gates = doc.sections(|h| h.starts_with("gates"));
    assert_eq!(gates.len(), 2);
    assert_eq!(gates[0].blocks.len(), 3);
    assert_eq!(gates[1].blocks.len(), 1);
    assert!(doc.sections(|h| h == "nothing").is_empty());
}

#[test]
fn loose_items_and_labels() {
    let doc = Document::parse("- first para\n\n  second para\n- other\n");
    let Block::Item { content, .. } = &doc.blocks[0] else {
        panic!("{doc:?}");
    };
    assert_eq!(content.plain(), "first para second para");
    let inl = Inlines(vec![text("Status : "), Span::Code("x".into())]);
    assert_eq!(
        inl.after_label("status").map(|i| i.0),
        Some(vec![text(" "), Span::Code("x".into())])
    );
    assert_eq!(inl.after_label("stat"), None);
    assert_eq!(Inlines(vec![text("é")]).after_label("status"), None);
}
