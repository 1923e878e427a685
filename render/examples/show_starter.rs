//! Prints a starter's display HTML and text: `cargo run --example show_starter -- welcome`.
fn main() {
    let slug = std::env::args().nth(1).unwrap_or_else(|| "welcome".into());
    let Some(starter) = render::starters::find(&slug) else {
        eprintln!("no starter {slug}");
        return;
    };
    let brand = render::Brand { company_name: Some("Herald Inc.".into()), address: Some("1 Main St, Springfield".into()), logo_url: Some("https://placehold.co/140x40.png".into()), ..Default::default() };
    match render::Compiled::from_document(Some(starter.subject), &starter.document, &brand, &render::Catalog::default()) {
        Ok(visual) => {
            if std::env::args().nth(2).as_deref() == Some("text") {
                println!("{}", visual.text);
            } else {
                println!("{}", visual.html);
            }
        }
        Err(problems) => eprintln!("{problems:#?}"),
    }
}
