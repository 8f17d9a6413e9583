// Small pieces every screen uses.

/** An error line for screen readers and eyes; nothing when there is no error. */
export const Err = ({ e }: { e?: string | undefined }) =>
  e ? (
    <p role="alert" class="error">
      {e}
    </p>
  ) : null;
