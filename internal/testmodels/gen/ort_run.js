// ort_run.js MODEL_DIR: runs MODEL_DIR/model.onnx with ONNX Runtime
// (npm onnxruntime-node, CPU) on the inputs of MODEL_DIR/reference.json and
// prints {"outputs": {name: {"shape": [...], "data": [...]}}} on stdout;
// with $SQC_ORT_OPTIMIZED_MODEL set, it also saves the optimised graph
// there; $SQC_ORT_LEVEL sets the session's graph optimisation level
// (default all).
// testmodels.RunORT runs it for compiler/hf's and compiler/onnx's ONNX
// Runtime comparisons; install the runtime with `npm install
// --ignore-scripts onnxruntime-node@1.30.0` (the install script only
// fetches optional GPU libraries) and point $SQC_ORT_NODE_MODULES at the
// node_modules directory.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

async function main() {
  const dir = process.argv[2];
  if (!dir) {
    throw new Error('usage: node ort_run.js MODEL_DIR');
  }
  const ref = JSON.parse(fs.readFileSync(path.join(dir, 'reference.json'), 'utf8'));
  // $SQC_ORT_LEVEL: the graph optimisation level (testmodels.RunORTAt).
  const options = { intraOpNumThreads: 1, graphOptimizationLevel: process.env.SQC_ORT_LEVEL || 'all' };
  if (process.env.SQC_ORT_OPTIMIZED_MODEL) {
    // Save the graph ONNX Runtime's optimizer made (its com.microsoft
    // fusions), as a session's optimized_model_filepath does, at the level
    // ONNX Runtime advises for saved models (above it, layout changes for
    // this CPU).
    options.optimizedModelFilePath = process.env.SQC_ORT_OPTIMIZED_MODEL;
    options.graphOptimizationLevel = 'extended';
  }
  const session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), options);
  const feeds = {};
  for (const [name, rows] of Object.entries(ref.inputs)) {
    const flat = BigInt64Array.from(rows.flat(), (v) => BigInt(v));
    feeds[name] = new ort.Tensor('int64', flat, [rows.length, rows[0].length]);
  }
  const results = await session.run(feeds);
  const outputs = {};
  for (const [name, t] of Object.entries(results)) {
    outputs[name] = { shape: t.dims, data: Array.from(t.data) };
  }
  process.stdout.write(JSON.stringify({ outputs }) + '\n');
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack || err) + '\n');
  process.exit(1);
});
