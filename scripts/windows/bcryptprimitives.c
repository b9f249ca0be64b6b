/* A stand-in for Windows' bcryptprimitives.dll, which Wine 8.0 lacks and
 * every Rust 1.78+ executable imports (std's random keys call ProcessPrng):
 * without it each .exe exits 53 before main. Built by scripts/check-windows
 * into the Wine prefix only, never shipped: real Windows has the DLL. */
#include <windows.h>
#include <bcrypt.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len > 0) {
    ULONG chunk = len > 0x40000000 ? 0x40000000 : (ULONG)len;
    if (BCryptGenRandom(NULL, data, chunk, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0)
      return FALSE;
    data += chunk;
    len -= chunk;
  }
  return TRUE;
}
