// A `.wasm` import is a compiled WebAssembly.Module in workerd (wrangler's default CompiledWasm rule).
declare module "*.wasm" {
  const module: WebAssembly.Module;
  export default module;
}
