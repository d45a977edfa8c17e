fn main() {
    eprintln!("jetcore: server not built yet");
    std::process::exit(1);
}
