/** A DOM for the tests of the pure modules that build elements (jsdom, no browser). */
import { JSDOM } from 'jsdom';

const { window } = new JSDOM('<!doctype html><html><body></body></html>');
Object.assign(globalThis, { document: window.document, HTMLElement: window.HTMLElement });
