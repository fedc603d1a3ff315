use super::*;

fn kind(path: &str, old: &str, new: &str) -> ChangeKind {
    classify_change(path, old, new)
}

#[test]
fn languages_come_from_extensions() {
    assert_eq!(Lang::of_path("src/a.py"), Some(Lang::Python));
    assert_eq!(Lang::of_path("x/lib.RS"), Some(Lang::Rust));
    assert_eq!(Lang::of_path("web/app.tsx"), Some(Lang::Tsx));
    assert_eq!(Lang::of_path("main.go"), Some(Lang::Go));
    assert_eq!(Lang::of_path("a.mjs"), Some(Lang::JavaScript));
    assert_eq!(Lang::of_path("Makefile"), None);
    assert_eq!(Lang::of_path("a.c"), None);
    for lang in [
        Lang::Python,
        Lang::Rust,
        Lang::JavaScript,
        Lang::TypeScript,
        Lang::Tsx,
        Lang::Go,
    ] {
        assert!(parse(lang, "x").is_some(), "{lang:?}");
    }
}

#[test]
fn python_formatting_comments_docstrings_and_annotations_are_told_apart() {
    let old = "def f(a, b):\n    '''Add.'''\n    return a + b  # sum\n";
    let wrapped = "def f(\n    a,\n    b,\n):\n    \"\"\"Add.\"\"\"\n    return (a + b)  # sum\n";
    assert_eq!(kind("m.py", old, wrapped), ChangeKind::Formatting);
    let commented = "def f(a, b):\n    '''Add two numbers.'''\n    return a + b  # the sum\n";
    assert_eq!(kind("m.py", old, commented), ChangeKind::Comments);
    let typed = "def f(a: int, b: int) -> int:\n    '''Add.'''\n    return a + b  # sum\n";
    assert_eq!(kind("m.py", old, typed), ChangeKind::Annotations);
    let cast = "def f(a, b):\n    '''Add.'''\n    return typing.cast(int, a + b)  # sum\n";
    assert_eq!(kind("m.py", old, cast), ChangeKind::Annotations);
    let checked = format!("if typing.TYPE_CHECKING:\n    T = typing.Type[int]\n\n{typed}");
    assert_eq!(kind("m.py", old, &checked), ChangeKind::Annotations);
    let run = format!("if typing.TYPE_CHECKING:\n    T = 1\nelse:\n    T = 2\n{old}");
    assert_eq!(kind("m.py", old, &run), ChangeKind::Behaviour);
    let changed = "def f(a, b):\n    '''Add.'''\n    return a - b  # sum\n";
    assert_eq!(kind("m.py", old, changed), ChangeKind::Behaviour);
}

#[test]
fn python_indentation_and_precedence_are_behaviour() {
    let old = "if x:\n    a()\n    b()\n";
    let dedented = "if x:\n    a()\nb()\n";
    assert_eq!(kind("m.py", old, dedented), ChangeKind::Behaviour);
    let grouped = "y = (a + b) * c\n";
    assert_eq!(
        kind("m.py", "y = a + b * c\n", grouped),
        ChangeKind::Behaviour
    );
    // A trailing comma makes a tuple, and a string's spaces are its value.
    assert_eq!(
        kind("m.py", "y = (a)\n", "y = (a,)\n"),
        ChangeKind::Behaviour
    );
    assert_eq!(
        kind("m.py", "y = 'a b'\n", "y = 'a  b'\n"),
        ChangeKind::Behaviour
    );
    // A bare string that is not the whole statement is code.
    assert_eq!(
        kind("m.py", "x = 'a'\n", "x = 'b'\n"),
        ChangeKind::Behaviour
    );
}

#[test]
fn rust_doc_comments_and_formatting() {
    let old = "/// Adds.\nfn f(a: u8, b: u8) -> u8 { a + b }\n";
    let formatted = "/// Adds.\nfn f(a: u8, b: u8) -> u8 {\n    a + b\n}\n";
    assert_eq!(kind("a.rs", old, formatted), ChangeKind::Formatting);
    let doc = "/// Adds two numbers.\nfn f(a: u8, b: u8) -> u8 { a + b } // done\n";
    assert_eq!(kind("a.rs", old, doc), ChangeKind::Comments);
    let reworded = "// Adds.\nfn f(a: u8, b: u8) -> u8 { a + b }\n";
    let reworded2 = "// Adds up.\nfn f(a: u8, b: u8) -> u8 { a + b }\n";
    assert_eq!(kind("a.rs", reworded, reworded2), ChangeKind::Comments);
    let string = "fn f() -> &'static str { \"a b\" }\n";
    assert_eq!(
        kind("a.rs", string, &string.replace("a b", "a  b")),
        ChangeKind::Behaviour
    );
    assert_eq!(
        kind(
            "a.go",
            "package a\nvar s = \"a b\"\n",
            "package a\nvar s = \"a  b\"\n"
        ),
        ChangeKind::Behaviour
    );
    // Rust types are not annotations: they choose what runs.
    let typed = "/// Adds.\nfn f(a: u16, b: u8) -> u8 { a + b }\n";
    assert_eq!(kind("a.rs", old, typed), ChangeKind::Behaviour);
    // A statement's `;` is not a separator in Rust.
    assert_eq!(
        kind("a.rs", "fn f() { g() }\n", "fn f() { g(); }\n"),
        ChangeKind::Behaviour
    );
}

#[test]
fn javascript_typescript_and_go() {
    assert_eq!(
        kind("a.js", "let a = f(1, 2)\n", "let a = f(\n  1,\n  2,\n);\n"),
        ChangeKind::Formatting
    );
    assert_eq!(
        kind("a.ts", "let a: number = 1;\n", "let a: string = 1; // x\n"),
        ChangeKind::Annotations
    );
    assert_eq!(
        kind(
            "a.go",
            "package a\nfunc f() int { return 1 }\n",
            "package a\n\n// F.\nfunc f() int {\n\treturn 1\n}\n"
        ),
        ChangeKind::Comments
    );
    assert_eq!(
        kind(
            "a.go",
            "package a\nfunc f() int { return 1 }\n",
            "package a\nfunc f() int { return 2 }\n"
        ),
        ChangeKind::Behaviour
    );
}

#[test]
fn unparsable_text_and_unknown_languages_are_judged_conservatively() {
    assert_eq!(
        kind("m.py", "def f(:\n", "def f( :\n"),
        ChangeKind::Behaviour
    );
    assert_eq!(
        kind(
            "a.c",
            "int f() {\n  return 1;\n}\n",
            "int f() { return 1; }\n"
        ),
        ChangeKind::Formatting
    );
    assert_eq!(
        kind(
            "a.c",
            "int f() { return 1; }\n",
            "int f() { return 1; } // one\n"
        ),
        ChangeKind::Behaviour
    );
    assert_eq!(kind("a.c", "a+b", "a + b"), ChangeKind::Behaviour);
    assert_eq!(kind("a.c", "x", "x"), ChangeKind::None);
}
