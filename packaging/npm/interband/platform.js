// Which platform package holds the native binary for this machine, and
// where its binary is. Used by install.js (postinstall) and by bin/interband
// (the fallback when install scripts did not run).
'use strict';

const path = require('path');

// One package per platform, as Rust target triples map to Node's names.
// On Linux the glibc build comes first; the musl one serves Alpine and the
// like (npm installs only the one whose `libc` field matches).
const PACKAGES = {
  'linux-x64': ['@interband/linux-x64', '@interband/linux-x64-musl'],
  'linux-arm64': ['@interband/linux-arm64', '@interband/linux-arm64-musl'],
  'darwin-arm64': ['@interband/darwin-arm64'],
  'darwin-x64': ['@interband/darwin-x64'],
};

function candidates() {
  return PACKAGES[`${process.platform}-${process.arch}`] || [];
}

/** The native binary's path, or null when no platform package is installed. */
function find() {
  for (const name of candidates()) {
    try {
      return require.resolve(`${name}/bin/interband`, { paths: [path.join(__dirname, '..')] });
    } catch (_) {
      // not installed: try the next
    }
  }
  return null;
}

/** What to tell a user who has no binary for this machine. */
function missing() {
  const list = candidates();
  const here = `${process.platform}-${process.arch}`;
  if (list.length === 0) {
    return `interband: there is no build for ${here} (Linux and macOS on x64 and arm64 only; see the README for building from source)\n`;
  }
  return `interband: the native binary for ${here} is missing: its package (${list.join(' or ')}) was not installed. ` +
    'Reinstall without --no-optional / --omit=optional: npm install -g interband\n';
}

module.exports = { PACKAGES, candidates, find, missing };
