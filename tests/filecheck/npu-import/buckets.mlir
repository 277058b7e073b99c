// --shape-buckets binds the symbolic input dims before import. One bucket: OUT.mlir
// is that bucket's module. Several: one OUT.<bucket>.mlir each, sharing the weight
// file OUT.weights.npz, listed on stdout. A symbolic dim left unbound, a dim the model
// lacks or a malformed spec is one error line and no file.
// RUN: npu-import %S/Inputs/batched_mlp.onnx --shape-buckets batch=4 -o %t.mlir && filecheck %s --check-prefix=ONE --input-file=%t.mlir
// RUN: rm -rf %t.dir && mkdir -p %t.dir && npu-import %S/Inputs/batched_mlp.onnx --shape-buckets batch=1,4,8 -o %t.dir/out.mlir | filecheck %s --check-prefix=WROTE
// RUN: ls %t.dir | filecheck %s --check-prefix=FILES
// RUN: filecheck %s --check-prefix=B8 --input-file=%t.dir/out.batch8.mlir
// RUN: not npu-import %S/Inputs/batched_mlp.onnx -o %t.dir/x.mlir 2>&1 | filecheck %s --check-prefix=UNBOUND
// RUN: not npu-import %S/Inputs/batched_mlp.onnx --shape-buckets seq=4 -o %t.dir/x.mlir 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not npu-import %S/Inputs/batched_mlp.onnx --shape-buckets batch=abc -o %t.dir/x.mlir 2>&1 | filecheck %s --check-prefix=SPEC
// RUN: ls %t.dir | filecheck %s --check-prefix=FILES

// ONE:      npu.weights = "{{.*}}.weights.npz"
// ONE:      func.func @main(%x: tensor<4x8xf32>) -> tensor<4x4xf32>
// ONE:      npu_graph.gemm %x, {{.*}} -> tensor<4x16xf32> loc("/fc1/Gemm")

// WROTE:      wrote {{.*}}out.batch1.mlir (batch=1)
// WROTE-NEXT: wrote {{.*}}out.batch4.mlir (batch=4)
// WROTE-NEXT: wrote {{.*}}out.batch8.mlir (batch=8)
// WROTE-NEXT: wrote {{.*}}out.weights.npz (weights shared by every bucket)

// FILES:      out.batch1.mlir
// FILES-NEXT: out.batch4.mlir
// FILES-NEXT: out.batch8.mlir
// FILES-NEXT: out.weights.npz
// FILES-NOT:  {{.}}

// B8:      npu.weights = "out.weights.npz"
// B8:      func.func @main(%x: tensor<8x8xf32>) -> tensor<8x4xf32>

// UNBOUND: error: symbolic dimension 'batch' in input 'x' is not bound; compile for chosen sizes with --shape-buckets batch=N[,N...]
// UNKNOWN: error: the model has no symbolic dimension 'seq' (its symbolic dims are 'batch')
// SPEC:    error: bad --shape-buckets 'batch=abc': 'abc' for 'batch' is not a positive integer
