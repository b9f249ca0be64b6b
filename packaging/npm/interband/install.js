// postinstall: makes bin/interband the native binary itself, so the command
// npm puts on PATH starts no Node (a hook runs on every tool call): a hard
// link to the platform package's binary, or a copy where a link cannot be
// made (another file system). Installs run with --ignore-scripts keep the
// placeholder, a Node script that runs the same binary.
//
// On Windows the placeholder stays: npm has already written the command
// shims on PATH (interband.cmd, interband.ps1) from its first line, and they
// run it through Node, so a native file there would be run by Node. The
// hooks never go through it: `interband install` writes the path of
// interband.exe in the platform package (what the placeholder runs) into
// the hosts' settings.
'use strict';

const fs = require('fs');
const path = require('path');
const { find, missing } = require('./platform.js');

const bin = path.join(__dirname, 'bin', 'interband');
const native = find();
if (process.platform === 'win32') {
  if (native === null) {
    process.stderr.write(missing());
  }
  process.exit(0);
}
if (native === null) {
  // Not fatal: npm must not fail the install; the placeholder says the same.
  process.stderr.write(missing());
  process.exit(0);
}

const temp = `${bin}.${process.pid}.tmp`;
try {
  fs.rmSync(temp, { force: true });
  try {
    fs.linkSync(native, temp);
  } catch (_) {
    fs.copyFileSync(native, temp);
  }
  fs.chmodSync(temp, 0o755);
  // In place at once: whoever runs `interband` sees the old file or the new.
  fs.renameSync(temp, bin);
} catch (e) {
  fs.rmSync(temp, { force: true });
  process.stderr.write(`interband: could not put the native binary at ${bin} (${e.message}); the Node fallback runs it instead\n`);
}
