import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { Field, type Tied } from '../ui.tsx';

/** What a labelled control takes besides its own attributes: its label, the API field it edits, the error. */
interface Labelled {
  label: string;
  name: string;
  error?: unknown;
  hint?: string;
  value: string;
  onValue: (value: string) => void;
}

/** The keys of `T` whose values are text: those a labelled control edits. */
type TextKey<T> = { [K in keyof T]: T[K] extends string ? K : never }[keyof T] & string;

/**
 * The values of a form's fields. `field(name)` is what a labelled control of that value takes: its name, value
 * and setter, and `error` (the form's, which the control shows when it names the field).
 */
export function useFields<T extends object>(initial: T, error: unknown) {
  const [values, setValues] = useState(initial);
  const set = (changes: Partial<T>) => setValues((v) => ({ ...v, ...changes }));
  const field = (name: TextKey<T>) => ({
    name,
    error,
    value: values[name] as string,
    onValue: (value: string) => set({ [name]: value } as Partial<T>),
  });
  return { values, set, field };
}

/**
 * The labelled field of `props`, whose `control` is given the attributes that tie it to the field, its value,
 * and the rest of `props` (its own attributes).
 */
function labelled<A>(
  props: Labelled & A,
  control: (tied: Tied & { value: string }, attrs: Omit<Labelled & A, keyof Labelled>) => ComponentChildren,
) {
  const { label, name, error, hint, value, onValue: _, ...attrs } = props;
  return (
    <Field label={label} name={name} error={error} hint={hint}>
      {(tied) => control({ ...tied, value }, attrs)}
    </Field>
  );
}

/** A labelled `<input>` whose API error is shown beneath it. */
export function InputField(
  props: Labelled & {
    type?: 'email' | 'url' | 'datetime-local';
    required?: boolean;
    placeholder?: string;
    min?: string;
    maxLength?: number;
  },
) {
  // `as object`: preact types an input's attributes by its `type`, and these fit every type used here.
  return labelled(props, (tied, attrs) => (
    <input {...tied} onInput={(e) => props.onValue(e.currentTarget.value)} {...(attrs as object)} />
  ));
}

/** A labelled code `<textarea>` whose API error is shown beneath it. */
export function TextAreaField(props: Labelled & { rows: number; onBlur?: () => void }) {
  return labelled(props, (tied, attrs) => (
    <textarea {...tied} class="code" onInput={(e) => props.onValue(e.currentTarget.value)} {...attrs} />
  ));
}

/** A labelled `<select>` of `options` (value, label), after a first option `none` for no choice. */
export function SelectField(
  props: Labelled & {
    required?: boolean;
    none?: string;
    options: { value: string; label: ComponentChildren }[];
  },
) {
  return labelled(props, (tied, { none, options, ...attrs }) => (
    <select {...tied} onChange={(e) => props.onValue(e.currentTarget.value)} {...attrs}>
      {none !== undefined && <option value="">{none}</option>}
      {options.map((o) => (
        <option key={o.value} value={o.value}>
          {o.label}
        </option>
      ))}
    </select>
  ));
}
