export * from './profiles.ts';
export * from './catalog.ts';
export * from './resolve.ts';
export * from './names.ts';
export * from './host-caps.ts';
export * from './toolkit.ts';
