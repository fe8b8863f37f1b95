//! A synthetic dataset of 2,000 encoded columns (`wide.csv` + `wide.toml`), written by the wide
//! data test and by `cargo run -p cent-tests --example wide_data -- DIR` for the README's
//! latency figure.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A dataset of 16 numeric features and 31 categorical features of 64 categories (the most a
/// group holds): 2,000 columns. The label depends on two numbers and on the first categorical
/// feature.
pub fn write(dir: &Path) -> std::io::Result<(PathBuf, PathBuf)> {
    const ROWS: usize = 3000;
    const NUMBERS: usize = 16;
    const GROUPS: usize = 31;
    const CATEGORIES: usize = 64;
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut csv = String::new();
    let header: Vec<String> =
        (0..NUMBERS).map(|j| format!("n{j}")).chain((0..GROUPS).map(|j| format!("c{j}"))).chain(["y".into()]).collect();
    writeln!(csv, "{}", header.join(",")).expect("writing to a String");
    for _ in 0..ROWS {
        let nums: Vec<u64> = (0..NUMBERS).map(|_| next() % 1000).collect();
        let cats: Vec<u64> = (0..GROUPS).map(|_| next() % CATEGORIES as u64).collect();
        let y = u8::from(nums[0] + nums[1] + if cats[0] < 20 { 400 } else { 0 } > 1200);
        let fields: Vec<String> = nums
            .iter()
            .map(|v| v.to_string())
            .chain(cats.iter().map(|c| format!("k{c:03}")))
            .chain([y.to_string()])
            .collect();
        writeln!(csv, "{}", fields.join(",")).expect("writing to a String");
    }
    let categories: Vec<String> = (0..CATEGORIES).map(|c| format!("\"k{c:03}\"")).collect();
    let mut toml = String::from("name = \"wide-synthetic\"\ndescription = \"2,000 encoded columns\"\n\n");
    toml.push_str("[target]\ncolumn = \"y\"\nfavourable = \"yes\"\n");
    toml.push_str("classes = [{ name = \"no\", values = [\"0\"] }, { name = \"yes\", values = [\"1\"] }]\n\n");
    for j in 0..NUMBERS {
        writeln!(toml, "[[feature]]\nname = \"n{j}\"\nkind = \"integer\"\nrange = [0, 999]\n")
            .expect("writing to a String");
    }
    for j in 0..GROUPS {
        writeln!(
            toml,
            "[[feature]]\nname = \"c{j}\"\nkind = \"categorical\"\ncategories = [{}]\n",
            categories.join(", ")
        )
        .expect("writing to a String");
    }
    let (csv_path, schema_path) = (dir.join("wide.csv"), dir.join("wide.toml"));
    std::fs::write(&csv_path, csv)?;
    std::fs::write(&schema_path, toml)?;
    Ok((csv_path, schema_path))
}
