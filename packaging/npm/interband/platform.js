// Which platform package holds the native binary for this machine, and
// where its binary is. Used by install.js (postinstall) and by bin/interband
// (the fallback when install scripts did not run).
'use strict';

const fs = require('fs');
const path = require('path');

// One package per platform, as Rust target triples map to Node's names.
// On Linux the glibc build comes first; the musl one serves Alpine and the
// like (npm installs only the one whose `libc` field matches).
const PACKAGES = {
  'linux-x64': ['@interband/linux-x64', '@interband/linux-x64-musl'],
  'linux-arm64': ['@interband/linux-arm64', '@interband/linux-arm64-musl'],
  'darwin-arm64': ['@interband/darwin-arm64'],
  'darwin-x64': ['@interband/darwin-x64'],
  'win32-x64': ['@interband/win32-x64'],
  'win32-arm64': ['@interband/win32-arm64'],
};

// The binary's file name in its platform package.
const BINARY = process.platform === 'win32' ? 'interband.exe' : 'interband';

function candidates() {
  return PACKAGES[`${process.platform}-${process.arch}`] || [];
}

/**
 * The native binary's path, or null when no platform package is installed.
 * Looked for only inside this package's own install tree: its own
 * node_modules, and the node_modules folder it was installed into (where npm
 * and pnpm put its optional dependencies). Never Node's search of every
 * ancestor folder: a prefix under a shared folder would otherwise run a
 * program another user planted in a node_modules above it.
 */
function find() {
  const trees = [path.join(__dirname, 'node_modules')];
  const parent = path.dirname(__dirname);
  if (path.basename(parent) === 'node_modules') {
    trees.push(parent);
  }
  for (const name of candidates()) {
    for (const tree of trees) {
      const file = path.join(tree, ...name.split('/'), 'bin', BINARY);
      try {
        if (fs.statSync(file).isFile()) {
          return file;
        }
      } catch (_) {
        // not installed here: look on
      }
    }
  }
  return null;
}

/** What to tell a user who has no binary for this machine. */
function missing() {
  const list = candidates();
  const here = `${process.platform}-${process.arch}`;
  if (list.length === 0) {
    return `interband: there is no build for ${here} (Linux, macOS and Windows on x64 and arm64 only; see the README for building from source)\n`;
  }
  return `interband: the native binary for ${here} is missing: its package (${list.join(' or ')}) was not installed. ` +
    'Reinstall without --no-optional / --omit=optional: npm install -g interband\n';
}

module.exports = { PACKAGES, BINARY, candidates, find, missing };
