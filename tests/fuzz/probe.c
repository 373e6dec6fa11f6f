/* Configure-time probe: does clang link a libFuzzer target here? */
int LLVMFuzzerTestOneInput(const unsigned char *data, unsigned long size) {
  (void)data;
  (void)size;
  return 0;
}
