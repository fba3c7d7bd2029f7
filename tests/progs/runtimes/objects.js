// objects.js [N=600000]: V8 under comex: N objects built and checked (the JIT
// compiles the hot loops), sorted, and a WebAssembly module filling and
// summing 64 MiB of its memory. Prints checksums; exits 1 on a mismatch.
'use strict';
const N = +(process.argv[2] || 600000);

function build(n) {
  const a = new Array(n);
  for (let i = 0; i < n; i++)
    a[i] = { id: i, name: 'n' + ((i * 7919) % n), vals: [i, i * 2, (i * 3) % 1000] };
  return a;
}
function hot(o) { return (o.id * 31 + o.vals[2] + o.name.length) | 0; }

const objs = build(N);
let s = 0;
for (let r = 0; r < 3; r++)
  for (const o of objs) s = (s + hot(o)) | 0;
for (let i = 0; i < N; i++)
  if (objs[i].id !== i || objs[i].vals[1] !== 2 * i) { console.error('MISMATCH at', i); process.exit(1); }
objs.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.id - b.id));
let c = 0;
for (let i = 0; i < N; i += 97) c = (c * 31 + objs[i].id) | 0;

// A Wasm module, assembled here: fill(n) stores i * 40503 at word i,
// sum(n) adds the words up as unsigned 64-bit. 1024 pages = 64 MiB.
function leb(n) { const b = []; do { let x = n & 0x7f; n >>>= 7; if (n) x |= 0x80; b.push(x); } while (n); return b; }
function sleb(n) { const b = []; for (;;) { const x = n & 0x7f; n >>= 7; if ((n === 0 && !(x & 0x40)) || (n === -1 && (x & 0x40))) { b.push(x); return b; } b.push(x | 0x80); } }
function section(id, bytes) { return [id, ...leb(bytes.length), ...bytes]; }
function name(s) { return [s.length, ...Buffer.from(s)]; }
function body(locals, code) { const b = [...locals, ...code, 0x0b]; return [...leb(b.length), ...b]; }
const loopHead = [0x02, 0x40, 0x03, 0x40, 0x20, 0x01, 0x20, 0x00, 0x4e, 0x0d, 0x01]; // block loop; if i >= n break
const loopTail = [0x20, 0x01, 0x41, 0x01, 0x6a, 0x21, 0x01, 0x0c, 0x00, 0x0b, 0x0b]; // i++; continue; end end
const fill = body([0x01, 0x01, 0x7f], [...loopHead,
  0x20, 0x01, 0x41, 0x02, 0x74, 0x20, 0x01, 0x41, ...sleb(40503), 0x6c, 0x36, 0x02, 0x00, ...loopTail]);
const sum = body([0x02, 0x01, 0x7f, 0x01, 0x7e], [...loopHead,
  0x20, 0x02, 0x20, 0x01, 0x41, 0x02, 0x74, 0x28, 0x02, 0x00, 0xad, 0x7c, 0x21, 0x02, ...loopTail, 0x20, 0x02]);
const mod = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  ...section(1, [0x02, 0x60, 0x01, 0x7f, 0x00, 0x60, 0x01, 0x7f, 0x01, 0x7e]),
  ...section(3, [0x02, 0x00, 0x01]),
  ...section(5, [0x01, 0x00, ...leb(1024)]),
  ...section(7, [0x03, ...name('mem'), 0x02, 0x00, ...name('fill'), 0x00, 0x00, ...name('sum'), 0x00, 0x01]),
  ...section(10, [0x02, ...fill, ...sum])]);
const wasm = new WebAssembly.Instance(new WebAssembly.Module(mod)).exports;
const words = 1024 * 65536 / 4;
wasm.fill(words);
const w = wasm.sum(words);
const mem = new Uint32Array(wasm.mem.buffer);
for (let i = 0; i < words; i += 4099)
  if (mem[i] !== Math.imul(i, 40503) >>> 0) { console.error('MISMATCH in wasm memory at word', i); process.exit(1); }
console.log(`node objects ${N}: hot ${s} sorted ${c} wasm ${w}`);
