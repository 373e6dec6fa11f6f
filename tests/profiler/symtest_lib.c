/* A library the symbol-lookup test loads only halfway through, so that a
 * symbol is missing first and present later. */
int mpp_symtest_answer(void);
int mpp_symtest_answer(void) {
  return 42;
}
