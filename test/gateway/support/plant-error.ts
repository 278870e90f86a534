/**
 * Preloaded (`node --import`) into a real gateway process by the crash-guard test: on SIGUSR2
 * it throws from a timer, the way a programming error escapes every handler.
 */
process.on('SIGUSR2', () => {
  setTimeout(() => {
    throw new Error('planted programming error');
  }, 0);
});
