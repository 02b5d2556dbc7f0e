//! Embeds the demo (demo/problems and demo/submissions.jsonl) into the binary, so that
//! `ioi-run evaluate --demo` works on a fresh machine with nothing else; links the binary at a
//! fixed address, so that it starts without relocating itself.

use std::fmt::Write;
use std::path::Path;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("demo");
    let mut files = Vec::new();
    collect(&root.join("problems"), &mut files);
    files.push(root.join("submissions.jsonl"));
    files.sort();
    let mut out = String::from("/// Demo files: (path relative to demo/, content).\npub static DEMO_FILES: &[(&str, &[u8])] = &[\n");
    for file in &files {
        let rel = file
            .strip_prefix(&root)
            .expect("under demo/")
            .to_string_lossy()
            .replace('\\', "/");
        writeln!(
            out,
            "    ({rel:?}, include_bytes!({:?})),",
            file.to_string_lossy()
        )
        .expect("write to a String");
    }
    out.push_str("];\n");
    let dest =
        Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("demo_files.rs");
    std::fs::write(dest, out).expect("write demo_files.rs");
    // A position-independent executable writes every pointer of its tables (vtables, string
    // tables, the GOT) at each start: tens of thousands of relocations, each written page a
    // fault (about 10 µs on a VM), and `ioi-run sandbox -- PROGRAM` pays that on every call.
    // Linked at a fixed address, the binary's tables stay clean pages shared with the file,
    // which a box's init (a copy of the caller) need not copy either. Libraries and the test
    // binaries are not concerned.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=demo/problems");
    println!("cargo:rerun-if-changed=demo/submissions.jsonl");
}

fn collect(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, files);
        } else {
            files.push(path);
        }
        println!("cargo:rerun-if-changed={}", entry.path().display());
    }
}
