use super::*;

#[test]
fn definitions_are_recognised() {
    for line in [
        "fn main() {",
        "    pub(crate) async fn run(&self) -> Result<()> {",
        "impl<T> Foo for Bar<T> {",
        "def handler(event):",
        "    async def fetch(self):",
        "func (s *Server) Serve() error {",
        "class Parser:",
        "export default function App() {",
        "const onClick = (e) => {",
        "export const load = async () => {",
        "public static void main(String[] args) {",
        "int compute(int a, int b)",
        "  async handleRequest(req, res) {",
        "  get size(): number {",
        "  private parse<T>(input: string): T {",
        "  constructor(options) {",
        "  onClick = async (event) => {",
    ] {
        assert!(looks_like_definition(line), "{line}");
    }
    for line in [
        "    if (x > 0) {",
        "    return compute(a, b);",
        "    let x = foo(1);",
        "    } else {",
        "    for (int i = 0; i < n; i++) {",
        "// fn not_really",
        "    while (running) {",
        "    describe('x', () => {",
        "    x = y.map(|a| {",
        "    Some(x) => {",
        "    } catch (e) {",
    ] {
        assert!(!looks_like_definition(line), "{line}");
    }
}

#[test]
fn windows_merge_when_touching() {
    let w = |start, end| Window {
        start,
        end,
        header: String::new(),
    };
    let merged = merge_windows(vec![w(20, 30), w(1, 10), w(11, 12), w(29, 40)]);
    let ranges: Vec<(u32, u32)> = merged.iter().map(|w| (w.start, w.end)).collect();
    assert_eq!(ranges, vec![(1, 12), (20, 40)]);
}
